package cors

import (
	"math/rand/v2"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// The request and response headers of CORS.
const (
	hOrigin                    = "origin"
	hRequestMethod             = "access-control-request-method"
	hRequestHeaders            = "access-control-request-headers"
	hRequestPrivateNetwork     = "access-control-request-private-network"
	hAllowOrigin               = "access-control-allow-origin"
	hAllowCredentials          = "access-control-allow-credentials"
	hAllowMethods              = "access-control-allow-methods"
	hAllowHeaders              = "access-control-allow-headers"
	hMaxAge                    = "access-control-max-age"
	hExposeHeaders             = "access-control-expose-headers"
	hAllowPrivateNetworkAccess = "access-control-allow-private-network"
	detailsCorsResponse        = "cors_response"
	valueTrue                  = "true"
	methodOptions              = "OPTIONS"
	anyValue                   = "*"
)

// filter is one request's CORS filter, recycled through the config's
// pool once the request ends.
type filter struct {
	cfg *filterConfig
	// pols are the request's policies, most specific first; configs is
	// scratch space for reading them.
	pols    []*router.CorsPolicy
	configs []httpfilter.RouteConfig
	// cors: the request is a CORS request the policy applies to; origin
	// is its Origin when allowed ("" otherwise).
	cors   bool
	origin string
	// preflight is set when the filter answers a preflight; its response
	// headers are added in EncodeHeaders, from the request's values.
	preflight                      bool
	reqMethod, reqHeaders, private string
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	route := s.Route()
	if route == nil || route.Direct != nil || route.Redirect != nil {
		// Envoy's filter looks at route entries only: direct responses
		// and redirects have none.
		return httpfilter.Continue
	}
	f.policies(s, route)
	if len(f.pols) == 0 {
		return httpfilter.Continue
	}
	enabled, shadow := f.enabled()
	if !enabled && !shadow {
		return httpfilter.Continue
	}
	req := s.RequestHeaders()
	origin, _ := req.Get(hOrigin)
	if origin == "" {
		return httpfilter.Continue
	}
	allowed := f.originAllowed(origin)
	if allowed {
		f.cfg.originValid.Inc()
		f.origin = origin
	} else {
		f.cfg.originInvalid.Inc()
	}
	if !enabled {
		// Shadow mode: counted, not enforced.
		return httpfilter.Continue
	}
	f.cors = true
	if s.Request().Method != methodOptions {
		return httpfilter.Continue
	}
	method, _ := req.Get(hRequestMethod)
	if method == "" {
		return httpfilter.Continue
	}
	if !allowed && f.forwardNotMatchingPreflights() {
		return httpfilter.Continue
	}
	// A preflight: answered here, its headers added by EncodeHeaders.
	f.preflight = true
	f.reqMethod = method
	f.reqHeaders, _ = req.Get(hRequestHeaders)
	f.private, _ = req.Get(hRequestPrivateNetwork)
	s.SendLocalReply(200, "", 0, detailsCorsResponse)
	return httpfilter.Stop
}

// EncodeHeaders implements httpfilter.Encoder: the preflight's headers,
// then those of every response to an allowed origin (Envoy's encoder runs
// on its own preflight response too).
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.ResponseHeaders()
	if f.preflight {
		if f.origin != "" {
			h.Set(hAllowOrigin, f.origin)
		}
		if f.allowCredentials() {
			h.Set(hAllowCredentials, valueTrue)
		}
		if m := f.first(func(p *router.CorsPolicy) string { return p.AllowMethods }); m == anyValue {
			h.Set(hAllowMethods, f.reqMethod)
		} else if m != "" {
			h.Set(hAllowMethods, m)
		}
		if v := f.first(func(p *router.CorsPolicy) string { return p.AllowHeaders }); v == anyValue {
			h.Set(hAllowHeaders, f.reqHeaders)
		} else if v != "" {
			h.Set(hAllowHeaders, v)
		}
		if v := f.first(func(p *router.CorsPolicy) string { return p.MaxAge }); v != "" {
			h.Set(hMaxAge, v)
		}
		if f.private == valueTrue && f.allowPrivateNetworkAccess() {
			h.Set(hAllowPrivateNetworkAccess, valueTrue)
		}
	}
	if !f.cors || f.origin == "" {
		return httpfilter.Continue
	}
	h.Set(hAllowOrigin, f.origin)
	if f.allowCredentials() {
		h.Set(hAllowCredentials, valueTrue)
	}
	if v := f.first(func(p *router.CorsPolicy) string { return p.ExposeHeaders }); v != "" {
		h.Set(hExposeHeaders, v)
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: the filter goes back to the
// pool, without references to the request.
func (f *filter) OnDestroy() {
	clear(f.pols)
	f.pols = f.pols[:0]
	f.cors, f.origin, f.preflight = false, "", false
	f.reqMethod, f.reqHeaders, f.private = "", "", ""
	f.cfg.pool.Put(f)
}

// enabled draws, from the most specific policy, whether the policy
// applies (filter_enabled, default all) and whether it runs in shadow
// mode (shadow_enabled, default none).
func (f *filter) enabled() (enabled, shadow bool) {
	p := f.pols[0]
	enabled = p.FilterEnabled == nil || p.FilterEnabled.Enabled(f.cfg.runtime, rand.Uint64())
	shadow = p.ShadowEnabled != nil && p.ShadowEnabled.Enabled(f.cfg.runtime, rand.Uint64())
	return enabled, shadow
}

// originAllowed matches the origin with the allowed origins of the most
// specific policy that has any; a matcher that accepts "*" allows every
// origin, as in Envoy.
func (f *filter) originAllowed(origin string) bool {
	for _, p := range f.pols {
		if len(p.AllowOrigins) == 0 {
			continue
		}
		for i := range p.AllowOrigins {
			m := &p.AllowOrigins[i]
			if m.Match(anyValue) || m.Match(origin) {
				return true
			}
		}
		return false
	}
	return false
}

// first is the first non-empty value of a policy field, most specific
// policy first.
func (f *filter) first(field func(*router.CorsPolicy) string) string {
	for _, p := range f.pols {
		if v := field(p); v != "" {
			return v
		}
	}
	return ""
}

// firstBool is the first set value of an optional policy field, def when
// no policy sets it.
func (f *filter) firstBool(field func(*router.CorsPolicy) *bool, def bool) bool {
	for _, p := range f.pols {
		if v := field(p); v != nil {
			return *v
		}
	}
	return def
}

func (f *filter) allowCredentials() bool {
	return f.firstBool(func(p *router.CorsPolicy) *bool { return p.AllowCredentials }, false)
}

func (f *filter) allowPrivateNetworkAccess() bool {
	return f.firstBool(func(p *router.CorsPolicy) *bool { return p.AllowPrivateNetworkAccess }, false)
}

// forwardNotMatchingPreflights defaults to true: a preflight from an
// origin no policy allows goes on to the upstream.
func (f *filter) forwardNotMatchingPreflights() bool {
	return f.firstBool(func(p *router.CorsPolicy) *bool { return p.ForwardNotMatchingPreflights }, true)
}
