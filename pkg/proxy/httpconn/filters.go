package httpconn

import (
	"errors"
	"fmt"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// httpFiltersCategory is the category of the extensions http_filters
// names.
const httpFiltersCategory = "envoy.filters.http"

// filterChain is the compiled http_filters list: the filters before the
// terminal one (the router), in order. The connection manager knows them
// only through the httpfilter interfaces.
type filterChain struct {
	configs []httpfilter.Config
}

// buildFilters compiles http_filters with the factories of the extension
// registry. A filter is chosen by the type of its typed_config, as Envoy
// resolves it, so any name works; a filter without typed_config is chosen
// by its name, either spelling, with its empty configuration. The last
// filter must be the terminal one (the router), and only the last. An
// empty list means the router alone. Errors name the field path.
func buildFilters(filters []*hcmv3.HttpFilter, reg *extension.Registry, ctx httpfilter.Context, rt RuntimeValues) (filterChain, error) {
	var fc filterChain
	if len(filters) > 0 && reg == nil {
		return fc, errors.New("http_filters: no HTTP filter is registered")
	}
	var errs []error
	for i, f := range filters {
		path := fmt.Sprintf("http_filters[%d]", i)
		last := i == len(filters)-1
		if f.GetDisabled() {
			// A disabled filter is configured but not run (Envoy lets
			// routes re-enable it; Outrigger's routes cannot).
			if last {
				errs = append(errs, fmt.Errorf("%s.disabled: the router, the last filter, cannot be disabled", path))
			}
			continue
		}
		factory, msg, err := resolveFilter(f, reg, lookupByName(rt))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		cfg, err := factory.Compile(msg, ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.typed_config.%w", path, err))
			continue
		}
		terminal := isTerminal(cfg)
		switch {
		case terminal && !last:
			errs = append(errs, fmt.Errorf("%s: the router filter is terminal and must be the last filter", path))
		case !terminal && last:
			errs = append(errs, fmt.Errorf("%s: the last filter must be the router, a terminal filter", path))
		case !terminal:
			fc.configs = append(fc.configs, cfg)
		}
	}
	return fc, errors.Join(errs...)
}

// The runtime guard that forbids finding an extension by its name, in both
// spellings. Envoy sets it to true from 1.22; Outrigger, like Envoy before,
// looks names up unless it is set.
const (
	noLookupByNameKey      = "envoy.reloadable_features.no_extension_lookup_by_name"
	noLookupByNameProxyKey = "proxy.reloadable_features.no_extension_lookup_by_name"
)

// lookupByName reports whether extensions may be found by name.
func lookupByName(rt RuntimeValues) bool {
	if rt == nil {
		return true
	}
	return !rt.Bool(noLookupByNameProxyKey, rt.Bool(noLookupByNameKey, false))
}

// isTerminal reports whether a compiled filter is the router.
func isTerminal(cfg httpfilter.Config) bool {
	t, ok := cfg.(httpfilter.Terminal)
	return ok && t.IsTerminal()
}

// resolveFilter finds the factory of an HTTP filter and decodes its
// configuration.
func resolveFilter(f *hcmv3.HttpFilter, reg *extension.Registry, byName bool) (httpfilter.Factory, proto.Message, error) {
	tc := f.GetTypedConfig()
	var (
		ext extension.Extension
		ok  bool
		msg proto.Message
	)
	if tc.GetTypeUrl() == "" && len(tc.GetValue()) == 0 {
		// No typed_config, or typed_config: {}: by name.
		if f.GetConfigDiscovery() != nil {
			return nil, nil, errors.New("config_discovery: not supported by Outrigger")
		}
		if !byName {
			// Envoy's own words when its guard forbids the lookup.
			return nil, nil, fmt.Errorf("typed_config: Didn't find a registered implementation for '%s' with type URL: '%s'", f.GetName(), tc.GetTypeUrl())
		}
		ext, ok = reg.ByName(httpFiltersCategory, f.GetName())
		if !ok || ext.Config == nil {
			return nil, nil, fmt.Errorf("name: filter %q without typed_config is not supported by Outrigger", f.GetName())
		}
		msg = proto.Clone(ext.Config)
	} else {
		ext, ok = reg.Lookup(tc.GetTypeUrl())
		if !ok || ext.Category != httpFiltersCategory {
			return nil, nil, fmt.Errorf("typed_config: filter type %s is not supported by Outrigger", extension.TypeName(tc.GetTypeUrl()))
		}
		var err error
		if msg, err = tc.UnmarshalNew(); err != nil {
			return nil, nil, fmt.Errorf("typed_config: %w", err)
		}
	}
	if ext.Disabled {
		return nil, nil, fmt.Errorf("typed_config: extension %q is disabled by --disable-extensions", ext.Name)
	}
	factory, ok := ext.Factory.(httpfilter.Factory)
	if !ok {
		return nil, nil, fmt.Errorf("typed_config: extension %q is not an HTTP filter", ext.Name)
	}
	return factory, msg, nil
}

// decodeFilters runs the filters on the request head, in order, each
// made for this request; false means one of them answered the request
// itself and the router does not run.
func (s *stream) decodeFilters() bool {
	for _, cfg := range s.m.filters.configs {
		f := cfg.NewFilter()
		s.active = append(s.active, f)
		if d, ok := f.(httpfilter.Decoder); ok && d.DecodeHeaders(s) == httpfilter.Stop {
			return false
		}
	}
	return true
}

// encodeFilters runs the request's filters on the response head, in
// reverse order, before it is sent.
func (s *stream) encodeFilters() {
	for i := len(s.active) - 1; i >= 0; i-- {
		if e, ok := s.active[i].(httpfilter.Encoder); ok {
			e.EncodeHeaders(s)
		}
	}
}

// The stream as the filters see it (httpfilter.Stream).

// Request implements httpfilter.Stream.
func (s *stream) Request() *router.Request { return &s.rreq }

// RequestHeaders implements httpfilter.Stream.
func (s *stream) RequestHeaders() router.HeaderEditor { return &s.reqHeaders }

// ResponseHeaders implements httpfilter.Stream.
func (s *stream) ResponseHeaders() router.HeaderEditor { return &s.respHeaders }

// ResponseStatus implements httpfilter.Stream.
func (s *stream) ResponseStatus() int { return s.status }

// SendLocalReply implements httpfilter.Stream.
func (s *stream) SendLocalReply(status int, body string, flags accesslog.ResponseFlags, details string) {
	s.localReply(status, body, flags, details)
}

// filterContext is what the filters' configurations may use of the
// server.
func filterContext(statPrefix string, deps Deps) httpfilter.Context {
	ctx := httpfilter.Context{
		Stats:      deps.Stats,
		StatPrefix: "http." + statPrefix + ".",
		Log:        deps.Log,
		Runtime:    noRuntime{},
		Now:        time.Now,
	}
	if deps.Health != nil {
		ctx.Health = deps.Health
	}
	if deps.Runtime != nil {
		ctx.Runtime = deps.Runtime
	}
	if deps.Now != nil {
		ctx.Now = deps.Now
	}
	return ctx
}

// noRuntime is the runtime of a manager built without one: every key has
// its default.
type noRuntime struct{}

func (noRuntime) Uint64(_ string, def uint64) uint64 { return def }
func (noRuntime) Bool(_ string, def bool) bool       { return def }
