// Package composite is the composite HTTP filter
// (envoy.filters.http.composite): wrapped in an ExtensionWithMatcher
// (package matchdelegate), it delegates each request to the filter that
// the matcher's ExecuteFilterAction names, and does nothing when no
// action matches. Every filter an action may delegate to is compiled
// with the configuration, so a bad one is a configuration error naming
// its path; a request that matches makes that filter for itself and hands
// it the rest of the stream. sample_percent runs the action on a share of
// the requests. Stats are Envoy's, under http.<stat_prefix>.composite.
package composite

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.composite"

// category is the extension category of the filters it delegates to.
const category = "envoy.filters.http"

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
	// delegates are the configurations its actions compiled, closed with
	// it.
	delegates []httpfilter.Config
}

var _ matchdelegate.ActionConfig = (*config)(nil)

// Compile implements httpfilter.Factory.
func (Factory) Compile(msg proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := msg.(*compositev3.Composite)
	if !ok {
		return nil, errors.New("not a Composite")
	}
	var errs []error
	if c.GetMatcher() != nil {
		errs = append(errs, errors.New("matcher: not supported by Outrigger (wrap the filter in an envoy.extensions.common.matching.v3.ExtensionWithMatcher)"))
	}
	if len(c.GetNamedFilterChains()) > 0 {
		errs = append(errs, errors.New("named_filter_chains: not supported by Outrigger"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "composite.")
	sc.Counter("filter_delegation_error")
	return &config{runtime: ctx.Runtime, success: sc.Counter("filter_delegation_success")}, nil
}

// executeFilterType is the full name of the action it takes.
var executeFilterType = string(proto.MessageName(&compositev3.ExecuteFilterAction{}))

// ActionTypes implements matchdelegate.ActionConfig.
func (c *config) ActionTypes() []string { return []string{executeFilterType} }

// delegate is a compiled ExecuteFilterAction.
type delegate struct {
	config httpfilter.Config
	// sample is sample_percent, nil when every match delegates.
	sample *runtime.Fraction
}

// CompileAction implements matchdelegate.ActionConfig: an
// ExecuteFilterAction's filter is compiled now, with the composite
// filter's name (the key of its per-route configuration, as in Envoy).
func (c *config) CompileAction(msg proto.Message, ctx httpfilter.Context) (any, bool, error) {
	a, ok := msg.(*compositev3.ExecuteFilterAction)
	if !ok {
		return nil, false, nil
	}
	var errs []error
	if a.GetDynamicConfig() != nil {
		errs = append(errs, errors.New("dynamic_config: extension config discovery (ECDS) is not supported by Outrigger"))
	}
	if a.GetFilterChain() != nil {
		errs = append(errs, errors.New("filter_chain: not supported by Outrigger"))
	}
	if a.GetFilterChainName() != "" {
		errs = append(errs, errors.New("filter_chain_name: not supported by Outrigger"))
	}
	if len(errs) > 0 {
		return nil, true, errors.Join(errs...)
	}
	tc := a.GetTypedConfig()
	if tc == nil {
		return nil, true, errors.New("typed_config: required")
	}
	d := &delegate{}
	if p := a.GetSamplePercent(); p != nil {
		f, err := runtime.FractionOf(p.GetRuntimeKey(), p.GetDefaultValue())
		if err != nil {
			return nil, true, fmt.Errorf("sample_percent.default_value.%w", err)
		}
		d.sample = &f
	}
	if ctx.Extensions == nil {
		return nil, true, errors.New("typed_config: no HTTP filter is registered")
	}
	ext, inner, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "filter", Category: category, Name: tc.GetName(), Config: tc.GetTypedConfig(),
	}, ctx.LookupByName)
	if err != nil {
		return nil, true, fmt.Errorf("typed_config.%w", err)
	}
	factory, ok := ext.Factory.(httpfilter.Factory)
	if !ok {
		return nil, true, fmt.Errorf("typed_config.typed_config: extension %q is not an HTTP filter", ext.Name)
	}
	cfg, err := factory.Compile(inner, ctx)
	if err != nil {
		return nil, true, httpfilter.PrefixErrors("typed_config.typed_config.", err)
	}
	if t, ok := cfg.(httpfilter.Terminal); ok && t.IsTerminal() {
		closeConfig(cfg)
		return nil, true, fmt.Errorf("typed_config.typed_config: the composite filter cannot delegate to the terminal filter %s", ext.Name)
	}
	d.config = cfg
	c.delegates = append(c.delegates, cfg)
	return d, true, nil
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
