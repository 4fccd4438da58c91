// Package apikeyauth is the API key authentication HTTP filter
// (envoy.filters.http.api_key_auth): a request must carry one of the
// configured keys, found in the first of the key sources (a header, whose
// "Bearer " prefix is dropped, a query parameter or a cookie) that has a
// value; the key names a client. Other requests get Envoy's 401. A route's
// ApiKeyAuthPerRoute replaces the credentials, key sources and forwarding
// that it sets, and its allowed_clients answers the other clients 403.
// Stats: http.<stat_prefix>.api_key_auth.allowed, unauthorized and
// forbidden.
package apikeyauth

import (
	"errors"
	"fmt"

	apikeyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.api_key_auth"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*apikeyv3.ApiKeyAuth)
	if !ok {
		return nil, errors.New("not an ApiKeyAuth configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	own, err := compileSettings(c.GetCredentials(), c.GetKeySources(), c.GetForwarding())
	if err != nil {
		return nil, err
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "api_key_auth.")
	return &filterConfig{
		name:         ctx.Name,
		own:          own,
		allowed:      sc.Counter("allowed"),
		unauthorized: sc.Counter("unauthorized"),
		forbidden:    sc.Counter("forbidden"),
	}, nil
}

// CompileRoute implements httpfilter.RouteFactory: an ApiKeyAuthPerRoute.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*apikeyv3.ApiKeyAuthPerRoute)
	if !ok {
		return nil, errors.New("not an ApiKeyAuthPerRoute configuration")
	}
	s, err := compileSettings(c.GetCredentials(), c.GetKeySources(), c.GetForwarding())
	if err != nil {
		return nil, err
	}
	rc := &routeConfig{settings: *s}
	if len(c.GetAllowedClients()) > 0 {
		rc.allowed = make(map[string]struct{}, len(c.GetAllowedClients()))
		for _, client := range c.GetAllowedClients() {
			rc.allowed[client] = struct{}{}
		}
	}
	return rc, nil
}

// settings are the credentials, key sources and forwarding of one
// configuration level; a nil field is not set there (a route's then
// falls back to the filter's).
type settings struct {
	// credentials maps each key to its client.
	credentials map[string]string
	sources     []keySource
	forwarding  *forwarding
}

// routeConfig is a compiled ApiKeyAuthPerRoute.
type routeConfig struct {
	settings
	// allowed are the clients let through; nil lets every authenticated
	// client through.
	allowed map[string]struct{}
}

// forwarding is what goes upstream of the authentication.
type forwarding struct {
	// header carries the client's name upstream, "" for none (lower case).
	header string
	// hide removes the key from every key source.
	hide bool
}

// compileSettings compiles one level's fields, with Envoy's errors.
func compileSettings(creds []*apikeyv3.Credential, sources []*apikeyv3.KeySource, fwd *apikeyv3.Forwarding) (*settings, error) {
	s := &settings{}
	if len(creds) > 0 {
		s.credentials = make(map[string]string, len(creds))
		for i, c := range creds {
			if _, dup := s.credentials[c.GetKey()]; dup {
				// The key is secret: the error names the entry, not the key.
				return nil, fmt.Errorf("credentials[%d].key: duplicated credential key", i)
			}
			s.credentials[c.GetKey()] = c.GetClient()
		}
	}
	for i, src := range sources {
		ks, err := compileKeySource(src)
		if err != nil {
			return nil, fmt.Errorf("key_sources[%d]: %w", i, err)
		}
		s.sources = append(s.sources, ks)
	}
	if fwd != nil {
		s.forwarding = &forwarding{header: lower(fwd.GetHeader()), hide: fwd.GetHideCredentials()}
	}
	return s, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	name                             string
	own                              *settings
	allowed, unauthorized, forbidden *stats.Counter
}

// NewFilter implements httpfilter.Config: the filter keeps no state per
// request.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

var _ httpfilter.Decoder = (*filterConfig)(nil)

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	creds, sources, fwd := c.own.credentials, c.own.sources, c.own.forwarding
	rc, _ := s.RouteConfig(c.name).(*routeConfig)
	if rc != nil {
		if rc.credentials != nil {
			creds = rc.credentials
		}
		if rc.sources != nil {
			sources = rc.sources
		}
		if rc.forwarding != nil {
			fwd = rc.forwarding
		}
	}
	if len(sources) == 0 {
		return c.deny(s, 401, "missing_key_sources")
	}
	if creds == nil {
		return c.deny(s, 401, "missing_credentials")
	}
	key := findKey(s, sources)
	if key == "" {
		return c.deny(s, 401, "missing_api_key")
	}
	client, ok := creds[key]
	if !ok {
		// Envoy's spelling.
		return c.deny(s, 401, "unkonwn_api_key")
	}
	if rc != nil && rc.allowed != nil {
		if _, ok := rc.allowed[client]; !ok {
			return c.deny(s, 403, "client_not_allowed")
		}
	}
	if fwd != nil {
		if fwd.header != "" {
			s.RequestHeaders().Set(fwd.header, client)
		}
		if fwd.hide {
			removeKey(s, sources)
		}
	}
	c.allowed.Inc()
	return httpfilter.Continue
}

// deny answers with Envoy's status, body and details.
func (c *filterConfig) deny(s httpfilter.Stream, status int, details string) httpfilter.Status {
	body := "Client authentication failed."
	if status == 403 {
		c.forbidden.Inc()
		body = "Client is forbidden."
	} else {
		c.unauthorized.Inc()
	}
	s.SendLocalReply(status, body, 0, details)
	return httpfilter.Stop
}
