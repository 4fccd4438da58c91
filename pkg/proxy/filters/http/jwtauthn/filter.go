package jwtauthn

import (
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// metadataNamespace is the dynamic metadata namespace of verified
// payloads and headers.
const metadataNamespace = "envoy.filters.http.jwt_authn"

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the key of the filter's per-route configurations.
	name         string
	now          func() time.Time
	bypassCORS   bool
	stripFailure bool
	providers    map[string]*provider
	// order is the providers in name order: a token's provider when the
	// requirement names none is the first with its issuer.
	order        []*provider
	requirements map[string]verifier
	rules        []rule
	// state is filter_state_rules, nil without.
	state *stateRules
	// all is the locations of every provider.
	all *extractor
	// claimHeaders are every provider's claim_to_headers header names,
	// removed from every request; payloadHeaders every provider's
	// forward_payload_header, removed by the requirements that verify
	// with the provider. A client cannot pass them off as the filter's.
	claimHeaders, payloadHeaders []string
	stats                        filterStats
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{c: c} }

// Close implements io.Closer: idle connections to JWKS servers close.
func (c *filterConfig) Close() error {
	for _, p := range c.providers {
		if p.remote != nil {
			p.remote.Close()
		}
	}
	return nil
}

// byIssuer is the provider of a token whose requirement names none: the
// first with its issuer, else the first without an issuer.
func (c *filterConfig) byIssuer(iss string) *provider {
	var open *provider
	for _, p := range c.order {
		if p.issuer == iss && iss != "" {
			return p
		}
		if p.issuer == "" && open == nil {
			open = p
		}
	}
	return open
}

// filter is one request's filter.
type filter struct {
	c *filterConfig
	// wwwAuthenticate goes on the reply to a failed request.
	wwwAuthenticate string
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder, as Envoy's decodeHeaders:
// CORS preflights pass when bypass_cors_preflight; a route's
// PerRouteConfig, else the first matching rule, chooses the requirement.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.c
	// Claim headers go from every request, those of paths that need no
	// token included, as Envoy sanitizes them.
	if len(c.claimHeaders) > 0 {
		h := s.RequestHeaders()
		for _, name := range c.claimHeaders {
			h.Del(name)
		}
	}
	if c.bypassCORS && isPreflight(s) {
		c.stats.corsPreflightBypassed.Inc()
		c.stats.allowed.Inc()
		return httpfilter.Continue
	}
	var v verifier
	matched := false
	if rc, ok := s.RouteConfig(c.name).(*routeConfig); ok {
		if !rc.disabled {
			if v, ok = c.requirements[rc.name]; !ok {
				msg := "Wrong requirement_name: " + rc.name + ". It should be one of [" + strings.Join(sortedKeys(c.requirements), ",") + "]"
				c.stats.denied.Inc()
				body := "Failed JWT authentication: " + msg
				if c.stripFailure {
					body = ""
				}
				s.SendLocalReply(403, body, 0, details(msg))
				return httpfilter.Stop
			}
		}
	} else {
		req := s.Request()
		for i := range c.rules {
			if c.rules[i].match.Matches(req) {
				v, matched = c.rules[i].v, true
				break
			}
		}
		// A rule that matched decides, even one requiring nothing.
		if !matched {
			v = c.stateVerifier(s)
		}
	}
	if v == nil {
		c.stats.allowed.Inc()
		return httpfilter.Continue
	}
	r := &request{c: c, s: s}
	st := v.verify(r)
	if r.aborted {
		return httpfilter.Stop
	}
	if r.metadata != nil {
		s.SetDynamicMetadata(metadataNamespace, r.metadata)
	}
	if st != statusOK {
		c.stats.denied.Inc()
		code := 401
		if st == statusAudienceNotAllowed {
			code = 403
		}
		body := st.String()
		if c.stripFailure {
			body = ""
		} else {
			f.wwwAuthenticate = `Bearer realm="` + httpfilter.OriginalURI(s) + `"`
			if st != statusMissing {
				f.wwwAuthenticate += `, error="invalid_token"`
			}
		}
		s.SendLocalReply(code, body, 0, details(st.String()))
		return httpfilter.Stop
	}
	if r.clearRoute {
		s.ClearRouteCache()
	}
	c.stats.allowed.Inc()
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: the challenge goes on the
// reply to a failed request.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.wwwAuthenticate != "" {
		s.ResponseHeaders().Set("www-authenticate", f.wwwAuthenticate)
	}
	return httpfilter.Continue
}

// isPreflight reports a CORS preflight: OPTIONS with Origin and
// Access-Control-Request-Method.
func isPreflight(s httpfilter.Stream) bool {
	if s.Request().Method != "OPTIONS" {
		return false
	}
	h := s.RequestHeaders()
	o, _ := h.Get("origin")
	m, _ := h.Get("access-control-request-method")
	return o != "" && m != ""
}
