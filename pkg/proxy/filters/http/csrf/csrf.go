// Package csrf is the CSRF HTTP filter (envoy.filters.http.csrf): for
// requests with a method that may modify state (POST, PUT, DELETE,
// PATCH) it compares the source origin (Origin, else Referer) with the
// target's (Host) and the additional_origins, and answers 403 "Invalid
// origin" when none matches, as Envoy's filter does. filter_enabled and
// shadow_enabled are runtime percentages; a route's CsrfPolicy replaces
// the filter's. Stats: http.<stat_prefix>.csrf.missing_source_origin,
// request_invalid and request_valid.
package csrf

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	csrfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/csrf/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.csrf"

// Factory builds the filter and compiles its per-route policies.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*csrfv3.CsrfPolicy)
	if !ok {
		return nil, errors.New("not a CsrfPolicy configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	p, err := compilePolicy(c)
	if err != nil {
		return nil, err
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "csrf.")
	return &filterConfig{
		name:          ctx.Name,
		own:           p,
		runtime:       ctx.Runtime,
		missingOrigin: sc.Counter("missing_source_origin"),
		invalid:       sc.Counter("request_invalid"),
		valid:         sc.Counter("request_valid"),
	}, nil
}

// CompileRoute implements httpfilter.RouteFactory: a CsrfPolicy.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*csrfv3.CsrfPolicy)
	if !ok {
		return nil, errors.New("not a CsrfPolicy configuration")
	}
	return compilePolicy(c)
}

// policy is a compiled CsrfPolicy.
type policy struct {
	enabled, shadow *runtime.Fraction
	origins         []router.StringMatcher
}

func compilePolicy(c *csrfv3.CsrfPolicy) (*policy, error) {
	if c.GetFilterEnabled() == nil {
		return nil, errors.New("filter_enabled: must be set")
	}
	p := &policy{}
	var err error
	if p.enabled, err = fraction(c.GetFilterEnabled()); err != nil {
		return nil, fmt.Errorf("filter_enabled.%w", err)
	}
	if p.shadow, err = fraction(c.GetShadowEnabled()); err != nil {
		return nil, fmt.Errorf("shadow_enabled.%w", err)
	}
	for i, m := range c.GetAdditionalOrigins() {
		sm, err := router.CompileStringMatcher(m)
		if err != nil {
			return nil, fmt.Errorf("additional_origins[%d].%w", i, err)
		}
		p.origins = append(p.origins, sm)
	}
	return p, nil
}

func fraction(p *corev3.RuntimeFractionalPercent) (*runtime.Fraction, error) {
	if p == nil {
		return nil, nil
	}
	f, err := runtime.FractionOf(p.GetRuntimeKey(), p.GetDefaultValue())
	if err != nil {
		return nil, fmt.Errorf("default_value: %w", err)
	}
	return &f, nil
}

// filterConfig is the compiled filter; it keeps no state per request, so
// it is its own filter.
type filterConfig struct {
	name                          string
	own                           *policy
	runtime                       httpfilter.Runtime
	missingOrigin, invalid, valid *stats.Counter
}

var _ httpfilter.Decoder = (*filterConfig)(nil)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	p := c.own
	if rp, ok := s.RouteConfig(c.name).(*policy); ok {
		p = rp
	}
	enabled := p.enabled.Enabled(c.runtime, rand.Uint64())
	shadow := p.shadow != nil && p.shadow.Enabled(c.runtime, rand.Uint64())
	if !enabled && !shadow {
		return httpfilter.Continue
	}
	switch s.Request().Method {
	case "POST", "PUT", "DELETE", "PATCH":
	default:
		return httpfilter.Continue
	}
	h := s.RequestHeaders()
	origin, _ := h.Get("origin")
	source := hostAndPort(origin)
	if source == "" {
		referer, _ := h.Get("referer")
		source = hostAndPort(referer)
	}
	ok := true
	if source == "" {
		ok = false
		c.missingOrigin.Inc()
	}
	if !p.valid(source, s.Request().Host) {
		ok = false
		c.invalid.Inc()
	}
	if ok {
		c.valid.Inc()
		return httpfilter.Continue
	}
	if !enabled {
		return httpfilter.Continue
	}
	s.SendLocalReply(403, "Invalid origin", 0, "csrf_origin_mismatch")
	return httpfilter.Stop
}

// valid reports whether the source origin is the target's (the Host) or
// one of the additional origins.
func (p *policy) valid(source, host string) bool {
	if source == hostAndPort(host) {
		return true
	}
	for i := range p.origins {
		if p.origins[i].Match(source) {
			return true
		}
	}
	return false
}

// hostAndPort is the host (and port) of an absolute URL, else v itself,
// as Envoy reads Origin, Referer and Host.
func hostAndPort(v string) string {
	if v == "" {
		return ""
	}
	if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Host
	}
	return v
}
