// Package matchdelegate is Envoy's match delegate
// (envoy.filters.http.match_delegate): an HTTP filter whose typed_config
// is an envoy.extensions.common.matching.v3.ExtensionWithMatcher wraps
// the filter of its extension_config with an xDS matcher (xds_matcher).
// The matcher is evaluated per request as the data its inputs read
// arrives (the request headers, then the response headers); a SkipFilter
// action skips the wrapped filter for the rest of the stream, and any
// other action goes to the wrapped filter (Envoy's onMatchCallback), which
// is how the composite filter learns which filter to delegate to. As in
// Envoy, a wrapper without a matcher skips its filter.
package matchdelegate

import (
	"errors"
	"fmt"
	"io"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	skipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/matcher/action/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.match_delegate"

// category is the extension category of the wrapped filter.
const category = "envoy.filters.http"

// ActionConfig is implemented by the compiled configuration of a filter
// that takes match actions other than SkipFilter (the composite filter's
// ExecuteFilterAction).
type ActionConfig interface {
	httpfilter.Config
	// CompileAction compiles one action of the matcher (the message in
	// the action's typed_config); ok false means the filter takes no
	// action of that type. Errors name the field below the message.
	CompileAction(action proto.Message, ctx httpfilter.Context) (compiled any, ok bool, err error)
	// ActionTypes are the full names of the action messages it takes,
	// for refusals.
	ActionTypes() []string
	// HasMatcher reports a matcher of the filter's own, which cannot be
	// wrapped (Envoy leaves the pair undefined).
	HasMatcher() bool
}

// ActionFilter is implemented by the request's filter of an ActionConfig:
// OnMatch hands it the action the matcher chose (as CompileAction
// compiled it), before the step it is called in reaches the filter.
type ActionFilter interface {
	OnMatch(s httpfilter.Stream, action any)
}

// Factory builds the filter.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// action is a compiled match action: skip the wrapped filter, or hand it
// value.
type action struct {
	skip  bool
	value any
}

// config is the compiled wrapper.
type config struct {
	name  string
	inner httpfilter.Config
	// tree is the xds_matcher, nil without one (the filter is then
	// skipped, unless a route gives a matcher).
	tree *httpmatch.Matcher[*action]
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(msg proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := msg.(*matchingv3.ExtensionWithMatcher)
	if !ok {
		return nil, errors.New("not an ExtensionWithMatcher")
	}
	//lint:ignore SA1019 the deprecated field is refused, not read
	if c.GetMatcher() != nil {
		return nil, errors.New("matcher: the deprecated envoy.config.common.matcher.v3.Matcher is not supported by Outrigger (use xds_matcher)")
	}
	ec := c.GetExtensionConfig()
	if ec == nil {
		return nil, errors.New("extension_config: required")
	}
	ic, err := CompileFilter(ec, ctx)
	if err != nil {
		return nil, httpfilter.PrefixErrors("extension_config.", err)
	}
	if ac, ok := ic.(ActionConfig); ok && ac.HasMatcher() {
		closeConfig(ic)
		return nil, errors.New("extension_config.typed_config.matcher: not supported by Outrigger in an ExtensionWithMatcher (Envoy leaves a wrapped filter's own matcher undefined): use one of the two matchers")
	}
	out := &config{name: ctx.Name, inner: ic}
	if m := c.GetXdsMatcher(); m != nil {
		out.tree, err = httpmatch.Compile(m, actionCompiler(ic, ctx))
		if err != nil {
			closeConfig(ic)
			return nil, httpfilter.PrefixErrors("xds_matcher.", err)
		}
	}
	return out, nil
}

// CompileFilter compiles the HTTP filter of a TypedExtensionConfig (the
// one a matcher wraps, or one the composite filter delegates to), found
// by its typed_config's type as the connection manager finds its filters;
// errors name the field below the TypedExtensionConfig. The router cannot
// be: it only ends the connection manager's chain.
func CompileFilter(tc *corev3.TypedExtensionConfig, ctx httpfilter.Context) (httpfilter.Config, error) {
	if ctx.Extensions == nil {
		return nil, errors.New("typed_config: no HTTP filter is registered")
	}
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "filter", Category: category, Name: tc.GetName(), Config: tc.GetTypedConfig(),
	}, ctx.LookupByName)
	if err != nil {
		return nil, err
	}
	factory, ok := ext.Factory.(httpfilter.Factory)
	if !ok {
		return nil, fmt.Errorf("typed_config: extension %q is not an HTTP filter", ext.Name)
	}
	cfg, err := factory.Compile(msg, ctx)
	if err != nil {
		return nil, httpfilter.PrefixErrors("typed_config.", err)
	}
	if t, ok := cfg.(httpfilter.Terminal); ok && t.IsTerminal() {
		closeConfig(cfg)
		return nil, fmt.Errorf("typed_config: %s is the terminal filter, which only ends the connection manager's chain: it cannot be wrapped or delegated to", ext.Name)
	}
	return cfg, nil
}

// DecodeAction decodes a matcher action's typed_config; skip reports a
// SkipFilter. Errors name the field from path on.
func DecodeAction(tc *xdscorev3.TypedExtensionConfig, path string) (msg proto.Message, skip bool, err error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, false, errors.New(path + ".typed_config: an action is required")
	}
	if msg, err = a.UnmarshalNew(); err != nil {
		return nil, false, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	_, skip = msg.(*skipv3.SkipFilter)
	return msg, skip, nil
}

// actionCompiler compiles the actions of a matcher wrapping inner:
// SkipFilter, and the actions inner takes (nil: none).
func actionCompiler(inner httpfilter.Config, ctx httpfilter.Context) httpmatch.ActionCompiler[*action] {
	return func(tc *xdscorev3.TypedExtensionConfig, path string) (*action, error) {
		msg, skip, err := DecodeAction(tc, path)
		if err != nil {
			return nil, err
		}
		if skip {
			return &action{skip: true}, nil
		}
		if ac, ok := inner.(ActionConfig); ok {
			v, ok, err := ac.CompileAction(msg, ctx)
			if err != nil {
				return nil, httpfilter.PrefixErrors(path+".typed_config.", err)
			}
			if ok {
				return &action{value: v}, nil
			}
		}
		return nil, fmt.Errorf("%s.typed_config: action %s is not supported by Outrigger for this filter (supported: %s)",
			path, proto.MessageName(msg), strings.Join(supportedActions(inner), ", "))
	}
}

// supportedActions lists the actions a matcher wrapping inner takes.
func supportedActions(inner httpfilter.Config) []string {
	out := []string{string(proto.MessageName(&skipv3.SkipFilter{}))}
	if ac, ok := inner.(ActionConfig); ok {
		out = append(out, ac.ActionTypes()...)
	}
	return out
}

// NewFilter implements httpfilter.Config.
func (c *config) NewFilter() httpfilter.Filter {
	return &filter{cfg: c, inner: c.inner.NewFilter()}
}

// Close releases what the wrapped filter's configuration holds.
func (c *config) Close() error {
	return closeConfig(c.inner)
}

// closeConfig closes a compiled configuration that holds resources.
func closeConfig(c httpfilter.Config) error {
	if cl, ok := c.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}
