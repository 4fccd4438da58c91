// Package oauth2 is the OAuth2 HTTP filter (envoy.filters.http.oauth2):
// it makes users of a site log in with an OAuth 2.0 authorization server
// through the authorization code flow (with PKCE), and keeps their
// session in HMAC-signed cookies. A request without a valid session is
// redirected to the authorization endpoint; the server's redirect back
// (redirect_path_matcher) is answered by exchanging the code at the token
// endpoint, setting the cookies and redirecting to where the user was
// going; later requests pass with their cookies (and, with
// forward_bearer_token, the access token as the Authorization header).
// An expired session is renewed with its refresh token; signout_path
// clears it. Only the request waits for the token endpoint: its own
// goroutine holds it, bounded by the endpoint's timeout.
//
// Its stats are Envoy's: http.<stat_prefix>.<filter stat_prefix>oauth_
// {unauthorized_rq,failure,passthrough,success,refreshtoken_success,
// refreshtoken_failure,allow_failed_passthrough}.
package oauth2

import (
	"errors"
	"io"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.oauth2"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// filterConfig is a compiled OAuth2: its configuration, nil when the
// filter only works through per-route configurations.
type filterConfig struct {
	name string
	c    *config
}

// NewFilter implements httpfilter.Config.
func (fc *filterConfig) NewFilter() httpfilter.Filter {
	return &filter{def: fc.c, name: fc.name}
}

// Close implements io.Closer: the idle connections to the token
// endpoint close.
func (fc *filterConfig) Close() error {
	if fc.c != nil {
		return fc.c.Close()
	}
	return nil
}

// Close implements io.Closer for a compiled configuration, the filter's
// own or a route's OAuth2PerRoute (closed with its route table once the
// last request using it ends): its idle connections to the token
// endpoint close.
func (c *config) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

var (
	_ io.Closer = (*filterConfig)(nil)
	_ io.Closer = (*config)(nil)
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(cfg proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := cfg.(*oauth2v3.OAuth2)
	if !ok {
		return nil, errors.New("not an OAuth2 configuration")
	}
	fc := &filterConfig{name: ctx.Name}
	if p.GetConfig() != nil {
		c, err := compile(p.GetConfig(), ctx, ctx.StatPrefix)
		if err != nil {
			return nil, httpfilter.PrefixErrors("config.", err)
		}
		fc.c = c
	}
	return fc, nil
}

// CompileRoute implements httpfilter.RouteFactory: an OAuth2PerRoute, a
// whole configuration that replaces the filter's on its routes. As in
// Envoy, its stats are kept at the root of the stat tree, under its own
// stat_prefix only.
func (Factory) CompileRoute(cfg proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := cfg.(*oauth2v3.OAuth2PerRoute)
	if !ok {
		return nil, errors.New("not an OAuth2PerRoute configuration")
	}
	if p.GetConfig() == nil {
		return nil, errors.New("config: required")
	}
	c, err := compile(p.GetConfig(), ctx, "")
	if err != nil {
		return nil, httpfilter.PrefixErrors("config.", err)
	}
	return c, nil
}
