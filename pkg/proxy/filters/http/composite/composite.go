// Package composite is the composite HTTP filter
// (envoy.filters.http.composite): wrapped in an ExtensionWithMatcher
// (package matchdelegate), or straight in http_filters with a matcher of
// its own (CompositePerRoute replacing it on a route), it delegates each
// request to the filter, or the chain of filters (filter_chain, or a
// named_filter_chains entry named by filter_chain_name), that the
// matcher's ExecuteFilterAction gives, and does nothing when no action
// matches. Every filter an action may
// delegate to is compiled with the configuration, so a bad one is a
// configuration error naming its path; a request that matches makes those
// filters for itself and hands them the rest of the stream.
// sample_percent runs the action on a share of the requests. Stats are
// Envoy's, under http.<stat_prefix>.composite.
package composite

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	skipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/matcher/action/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.composite"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// config is the compiled filter.
type config struct {
	runtime httpfilter.Runtime
	// success is filter_delegation_success. Its pair
	// filter_delegation_error counts, in Envoy, delegated factories that
	// fail at request time; here every filter is built with the
	// configuration, so it stays 0.
	success *stats.Counter
	// named are the named_filter_chains.
	named map[string][]httpfilter.Config
	// delegates are every configuration it compiled, closed with it.
	delegates []httpfilter.Config
	// tree is the composite's own matcher (the composite straight in
	// http_filters), nil without one.
	tree *httpmatch.Matcher[*delegate]
	// name is the filter's configured name, the key of its
	// CompositePerRoute.
	name string
}

var (
	_ matchdelegate.ActionConfig = (*config)(nil)
	_ httpfilter.RouteFactory    = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(msg proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := msg.(*compositev3.Composite)
	if !ok {
		return nil, errors.New("not a Composite")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "composite.")
	// Registered so that it shows, at 0 (see success).
	sc.Counter("filter_delegation_error")
	out := &config{runtime: ctx.Runtime, success: sc.Counter("filter_delegation_success"), name: ctx.Name}
	names := slices.Sorted(maps.Keys(c.GetNamedFilterChains()))
	for _, name := range names {
		chain, err := out.compileChain(c.GetNamedFilterChains()[name], ctx)
		if err != nil {
			out.Close()
			return nil, httpfilter.PrefixErrors(fmt.Sprintf("named_filter_chains[%q].", name), err)
		}
		if out.named == nil {
			out.named = map[string][]httpfilter.Config{}
		}
		out.named[name] = chain
	}
	if m := c.GetMatcher(); m != nil {
		tree, err := httpmatch.Compile(m, out.compileOwnAction(ctx))
		if err != nil {
			out.Close()
			return nil, httpfilter.PrefixErrors("matcher.", err)
		}
		out.tree = tree
	}
	return out, nil
}

// compileOwnAction compiles an action of the composite's own matcher:
// ExecuteFilterAction, or SkipFilter, which delegates to nothing.
func (c *config) compileOwnAction(ctx httpfilter.Context) httpmatch.ActionCompiler[*delegate] {
	return func(tc *xdscorev3.TypedExtensionConfig, path string) (*delegate, error) {
		msg, skip, err := matchdelegate.DecodeAction(tc, path)
		if err != nil {
			return nil, err
		}
		if skip {
			return &delegate{}, nil
		}
		d, ok, err := c.CompileAction(msg, ctx)
		if err != nil {
			return nil, httpfilter.PrefixErrors(path+".typed_config.", err)
		}
		if !ok {
			return nil, fmt.Errorf("%s.typed_config: action %s is not supported by Outrigger for the composite filter (supported: %s, %s)", path, proto.MessageName(msg), executeFilterType, proto.MessageName(&skipv3.SkipFilter{}))
		}
		return d.(*delegate), nil
	}
}

// HasMatcher implements matchdelegate.ActionConfig: the composite's own
// matcher, which Envoy leaves undefined inside an ExtensionWithMatcher.
func (c *config) HasMatcher() bool { return c.tree != nil }

// routeMatcher is a compiled CompositePerRoute: its matcher replaces the
// composite's own on the routes that carry it.
type routeMatcher struct {
	tree *httpmatch.Matcher[*delegate]
	// owner holds the filters its actions delegate to, closed with the
	// route configuration (see Close).
	owner *config
}

var _ io.Closer = (*routeMatcher)(nil)

// Close closes the filters its actions delegate to: the connection
// manager calls it once the route configuration that holds it is
// replaced and no request uses it any more.
func (r *routeMatcher) Close() error { return r.owner.Close() }

// CompileRoute implements httpfilter.RouteFactory: a CompositePerRoute's
// matcher, with the actions of the composite's own. Its filters are
// compiled with the route configuration, and those that hold resources
// are closed with it; a filter_chain_name reads the composite's named
// chains when a request matches.
func (Factory) CompileRoute(msg proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := msg.(*compositev3.CompositePerRoute)
	if !ok {
		return nil, errors.New("not a CompositePerRoute")
	}
	rc := &config{}
	tree, err := httpmatch.Compile(c.GetMatcher(), rc.compileOwnAction(ctx))
	if err != nil {
		rc.Close()
		return nil, httpfilter.PrefixErrors("matcher.", err)
	}
	return &routeMatcher{tree: tree, owner: rc}, nil
}

// executeFilterType is the full name of the action it takes.
var executeFilterType = string(proto.MessageName(&compositev3.ExecuteFilterAction{}))

// ActionTypes implements matchdelegate.ActionConfig.
func (c *config) ActionTypes() []string { return []string{executeFilterType} }

// delegate is a compiled ExecuteFilterAction.
type delegate struct {
	// chain are the filters it delegates to, in order.
	chain []httpfilter.Config
	// named is its filter_chain_name: the chain is the composite's
	// named chain of that name, read when a request matches (none: Envoy
	// then applies no filter).
	named string
	// sample is sample_percent, nil when every match delegates.
	sample *runtime.Fraction
}

// CompileAction implements matchdelegate.ActionConfig: an
// ExecuteFilterAction's filters are compiled now, with the composite
// filter's name (the key of their per-route configuration, as in Envoy).
func (c *config) CompileAction(msg proto.Message, ctx httpfilter.Context) (any, bool, error) {
	a, ok := msg.(*compositev3.ExecuteFilterAction)
	if !ok {
		return nil, false, nil
	}
	set := 0
	for _, has := range []bool{a.GetTypedConfig() != nil, a.GetDynamicConfig() != nil, a.GetFilterChain() != nil, a.GetFilterChainName() != ""} {
		if has {
			set++
		}
	}
	switch {
	case set > 1:
		return nil, true, errors.New("only one of typed_config, dynamic_config, filter_chain and filter_chain_name may be set")
	case a.GetDynamicConfig() != nil:
		return nil, true, errors.New("dynamic_config: extension config discovery (ECDS) is not supported by Outrigger")
	case set == 0:
		return nil, true, errors.New("typed_config: one of typed_config, filter_chain and filter_chain_name is required")
	}
	d := &delegate{}
	if p := a.GetSamplePercent(); p != nil {
		f, err := runtime.FractionOf(p.GetRuntimeKey(), p.GetDefaultValue())
		if err != nil {
			return nil, true, fmt.Errorf("sample_percent.default_value.%w", err)
		}
		d.sample = &f
	}
	switch {
	case a.GetTypedConfig() != nil:
		cfg, err := c.compileFilter(a.GetTypedConfig(), ctx)
		if err != nil {
			return nil, true, httpfilter.PrefixErrors("typed_config.", err)
		}
		d.chain = []httpfilter.Config{cfg}
	case a.GetFilterChain() != nil:
		chain, err := c.compileChain(a.GetFilterChain(), ctx)
		if err != nil {
			return nil, true, httpfilter.PrefixErrors("filter_chain.", err)
		}
		d.chain = chain
	default:
		d.named = a.GetFilterChainName()
	}
	return d, true, nil
}

// compileChain compiles a FilterChainConfiguration; errors name the field
// below it.
func (c *config) compileChain(fc *compositev3.FilterChainConfiguration, ctx httpfilter.Context) ([]httpfilter.Config, error) {
	if len(fc.GetTypedConfig()) == 0 {
		return nil, errors.New("typed_config: at least one filter is required")
	}
	var out []httpfilter.Config
	for i, tc := range fc.GetTypedConfig() {
		cfg, err := c.compileFilter(tc, ctx)
		if err != nil {
			return nil, httpfilter.PrefixErrors(fmt.Sprintf("typed_config[%d].", i), err)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// compileFilter compiles one delegated filter (a TypedExtensionConfig),
// kept to be closed with the composite; errors name the field below it.
func (c *config) compileFilter(tc *corev3.TypedExtensionConfig, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, err := matchdelegate.CompileFilter(tc, ctx)
	if err != nil {
		return nil, err
	}
	c.delegates = append(c.delegates, cfg)
	return cfg, nil
}

// NewFilter implements httpfilter.Config.
func (c *config) NewFilter() httpfilter.Filter { return &filter{cfg: c} }

// Close closes the configurations of the filters it delegates to.
func (c *config) Close() error {
	var errs []error
	for _, d := range c.delegates {
		errs = append(errs, closeConfig(d))
	}
	return errors.Join(errs...)
}

// closeConfig closes a compiled configuration that holds resources.
func closeConfig(c httpfilter.Config) error {
	if cl, ok := c.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// sampled draws whether a match delegates, under sample_percent.
func (c *config) sampled(d *delegate) bool {
	if d.sample == nil {
		return true
	}
	return d.sample.Enabled(c.runtime, rand.Uint64())
}
