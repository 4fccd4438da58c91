package oauth2

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/go-logr/logr"
	"golang.org/x/net/http/httpguts"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/genericsecret"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Envoy's defaults.
const (
	defaultScope                  = "user"
	defaultRefreshTokenExpiresIn  = 604800 * time.Second
	defaultCSRFTokenExpiresIn     = 600 * time.Second
	defaultVerifierTokenExpiresIn = 600 * time.Second
	scopeOpenID                   = "openid"
)

// authType is how the client authenticates to the token endpoint.
type authType uint8

const (
	authURLEncodedBody authType = iota
	authBasic
	authTLSClient
	authPrivateKeyJWT
)

// config is a compiled OAuth2Config: the filter's, or a route's.
type config struct {
	// Token endpoint: the cluster's transport, the request's host and
	// path, the timeout of one exchange (0: none).
	transport            *http.Transport
	svc                  httpfilter.Services
	cluster              string
	tokenHost, tokenPath string
	timeout              time.Duration
	defaultExpiresIn     time.Duration
	// retry is retry_policy; jwt the PRIVATE_KEY_JWT authentication.
	retry grpcservice.ClientRetry
	jwt   *privateKeyJWT

	// authorizationURL is the authorization endpoint without its query;
	// authorizationQuery its query parameters with client_id,
	// response_type and scope set, by name; resources the encoded
	// "&resource=" parameters appended last.
	authorizationURL   string
	authorizationQuery map[string][]string
	resources          string

	endSessionEndpoint string
	// postLogout: the post_logout_redirect_uri parameter; disabled
	// leaves it out, a nil formatter sends scheme://host/.
	postLogoutDisabled  bool
	postLogoutFormatter *accesslog.Formatter

	clientID                 string
	clientSecret, hmacSecret *genericsecret.Value
	authType                 authType

	redirectURI        *accesslog.Formatter
	originalRequestURI *accesslog.Formatter
	allowedDomains     []string

	redirectMatcher, signoutMatcher        router.StringMatcher
	passThrough, denyRedirect, allowFailed []router.HeaderMatch

	cookies      cookieNames
	cookieDomain string
	bearerCookie, hmacCookie, expiresCookie, idCookie, refreshCookie,
	nonceCookie, verifierCookie cookieSettings

	forwardBearer, preserveAuthorization bool
	// forwardID is forward_id_token's header, lower case ("" when
	// unset); the ID token goes there raw, or as a Bearer credential
	// when it is authorization.
	forwardID string
	// chunking is token_cookie_chunking (nil: tokens in single cookies).
	chunking                                                *chunking
	useRefreshToken                                         bool
	disableIDCookie, disableAccessCookie, disableRefresh    bool
	disableEncryption, accessExpiryForID                    bool
	refreshTokenExpiresIn, csrfExpiresIn, verifierExpiresIn time.Duration

	stats filterStats
	now   func() time.Time
	// log is the "http" logger, for the token requests' failures.
	log logr.Logger
}

// compile checks and compiles an OAuth2Config; statPrefix is the scope
// of its stats. Errors name the field path below the config.
func compile(p *oauth2v3.OAuth2Config, ctx httpfilter.Context, statPrefix string) (*config, error) {
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	c := &config{
		clientID:              p.GetCredentials().GetClientId(),
		cookies:               compileCookieNames(p.GetCredentials().GetCookieNames()),
		cookieDomain:          p.GetCredentials().GetCookieDomain(),
		forwardBearer:         p.GetForwardBearerToken(),
		preserveAuthorization: p.GetPreserveAuthorizationHeader(),
		useRefreshToken:       p.GetUseRefreshToken() == nil || p.GetUseRefreshToken().GetValue(),
		disableIDCookie:       p.GetDisableIdTokenSetCookie(),
		disableAccessCookie:   p.GetDisableAccessTokenSetCookie(),
		disableRefresh:        p.GetDisableRefreshTokenSetCookie(),
		disableEncryption:     p.GetDisableTokenEncryption(),
		accessExpiryForID:     p.GetUseAccessTokenExpiryForIdTokenCookie(),
		defaultExpiresIn:      p.GetDefaultExpiresIn().AsDuration().Truncate(time.Second),
		refreshTokenExpiresIn: durationOr(p.GetDefaultRefreshTokenExpiresIn().AsDuration(), p.GetDefaultRefreshTokenExpiresIn() != nil, defaultRefreshTokenExpiresIn),
		csrfExpiresIn:         durationOr(p.GetCsrfTokenExpiresIn().AsDuration(), p.GetCsrfTokenExpiresIn() != nil, defaultCSRFTokenExpiresIn),
		verifierExpiresIn:     durationOr(p.GetCodeVerifierTokenExpiresIn().AsDuration(), p.GetCodeVerifierTokenExpiresIn() != nil, defaultVerifierTokenExpiresIn),
		allowedDomains:        p.GetAllowedRedirectDomains(),
		endSessionEndpoint:    p.GetEndSessionEndpoint(),
		now:                   ctx.Now,
		log:                   ctx.Log,
		stats:                 newFilterStats(ctx.Stats, statPrefix+p.GetStatPrefix()),
	}
	if c.now == nil {
		c.now = time.Now
	}
	cc := p.GetCookieConfigs()
	c.bearerCookie = compileCookieSettings(cc.GetBearerTokenCookieConfig())
	c.hmacCookie = compileCookieSettings(cc.GetOauthHmacCookieConfig())
	c.expiresCookie = compileCookieSettings(cc.GetOauthExpiresCookieConfig())
	c.idCookie = compileCookieSettings(cc.GetIdTokenCookieConfig())
	c.refreshCookie = compileCookieSettings(cc.GetRefreshTokenCookieConfig())
	c.nonceCookie = compileCookieSettings(cc.GetOauthNonceCookieConfig())
	c.verifierCookie = compileCookieSettings(cc.GetCodeVerifierCookieConfig())

	if p.GetPreserveAuthorizationHeader() && p.GetForwardBearerToken() {
		// Envoy's words.
		return nil, errors.New("preserve_authorization_header: invalid combination of forward_bearer_token and preserve_authorization_header configuration. If forward_bearer_token is set to true, then preserve_authorization_header must be false")
	}
	if err := c.compileTokenEndpoint(p, ctx); err != nil {
		return nil, err
	}
	if err := c.compileForwardID(p); err != nil {
		return nil, err
	}
	var err error
	if c.retry, err = grpcservice.CompileClientRetry(p.GetRetryPolicy(), "the token endpoint"); err != nil {
		return nil, fmt.Errorf("retry_policy.%w", err)
	}
	if p.GetTokenCookieChunking() != nil {
		if c.chunking, err = compileChunking(p.GetTokenCookieChunking()); err != nil {
			return nil, fmt.Errorf("token_cookie_chunking.%w", err)
		}
	}
	if err := c.compileAuthorization(p); err != nil {
		return nil, err
	}
	if err := c.compileSecrets(p, ctx); err != nil {
		return nil, err
	}
	if c.redirectURI, err = headerFormatter(p.GetRedirectUri(), "redirect_uri"); err != nil {
		return nil, err
	}
	if p.GetOriginalRequestUri() != "" {
		if c.originalRequestURI, err = headerFormatter(p.GetOriginalRequestUri(), "original_request_uri"); err != nil {
			return nil, err
		}
	}
	if u := p.GetPostLogoutRedirectUri(); u != nil {
		c.postLogoutDisabled = u.GetDisabled()
		if _, ok := u.GetConfig().(*oauth2v3.PostLogoutRedirectUri_Uri); ok {
			if c.postLogoutFormatter, err = headerFormatter(u.GetUri(), "post_logout_redirect_uri.uri"); err != nil {
				return nil, err
			}
		}
	}
	if c.redirectMatcher, err = compilePathMatcher(p.GetRedirectPathMatcher(), "redirect_path_matcher"); err != nil {
		return nil, err
	}
	if c.signoutMatcher, err = compilePathMatcher(p.GetSignoutPath(), "signout_path"); err != nil {
		return nil, err
	}
	if c.passThrough, err = compileHeaderMatchers(p.GetPassThroughMatcher(), "pass_through_matcher"); err != nil {
		return nil, err
	}
	if c.denyRedirect, err = compileHeaderMatchers(p.GetDenyRedirectMatcher(), "deny_redirect_matcher"); err != nil {
		return nil, err
	}
	if c.allowFailed, err = compileHeaderMatchers(p.GetAllowFailedMatcher(), "allow_failed_matcher"); err != nil {
		return nil, err
	}
	return c, nil
}

// compileForwardID compiles forward_id_token with Envoy's checks: a
// header name, neither a pseudo-header nor Host, and Authorization only
// when neither forward_bearer_token nor preserve_authorization_header
// also claims it.
func (c *config) compileForwardID(p *oauth2v3.OAuth2Config) error {
	fw := p.GetForwardIdToken()
	if fw == nil {
		return nil
	}
	h := strings.ToLower(fw.GetHeader())
	switch {
	case h == "":
		return errors.New("forward_id_token.header: required")
	case strings.HasPrefix(h, ":") || h == "host":
		return fmt.Errorf("forward_id_token.header: %q: pseudo-headers and host cannot carry the ID token", fw.GetHeader())
	case !httpguts.ValidHeaderFieldName(h):
		return fmt.Errorf("forward_id_token.header: %q is not a valid header name", fw.GetHeader())
	case h == "authorization" && p.GetForwardBearerToken():
		return errors.New("forward_id_token.header: the ID token cannot be forwarded in Authorization when forward_bearer_token is set")
	case h == "authorization" && p.GetPreserveAuthorizationHeader():
		return errors.New("forward_id_token.header: the ID token cannot be forwarded in Authorization when preserve_authorization_header is set")
	}
	c.forwardID = h
	return nil
}

// durationOr is d when set, else def.
func durationOr(d time.Duration, set bool, def time.Duration) time.Duration {
	if !set {
		return def
	}
	return d.Truncate(time.Second)
}

// compileTokenEndpoint compiles token_endpoint and auth_type.
func (c *config) compileTokenEndpoint(p *oauth2v3.OAuth2Config, ctx httpfilter.Context) error {
	te := p.GetTokenEndpoint()
	if te == nil {
		return errors.New("token_endpoint: required")
	}
	if te.GetCluster() == "" {
		return errors.New("token_endpoint.cluster: required")
	}
	if ctx.Services == nil {
		return errors.New("token_endpoint.cluster: no cluster can be reached")
	}
	// 0 is no timeout of its own, as for Envoy's async client; the
	// stream's timeouts still bound the wait.
	c.timeout = te.GetTimeout().AsDuration()
	if c.timeout < 0 {
		return errors.New("token_endpoint.timeout: must not be negative")
	}
	c.tokenHost, c.tokenPath = httpfilter.HostPath(te.GetUri())
	c.svc, c.cluster = ctx.Services, te.GetCluster()
	c.transport = httpfilter.ClusterTransport(ctx.Services, te.GetCluster(), 4)
	switch p.GetAuthType() {
	case oauth2v3.OAuth2Config_BASIC_AUTH:
		c.authType = authBasic
	case oauth2v3.OAuth2Config_TLS_CLIENT_AUTH:
		c.authType = authTLSClient
	case oauth2v3.OAuth2Config_PRIVATE_KEY_JWT:
		c.authType = authPrivateKeyJWT
		j, err := compilePrivateKeyJWT(p.GetPrivateKeyJwtConfig(), te.GetUri())
		if err != nil {
			return fmt.Errorf("private_key_jwt_config.%w", err)
		}
		c.jwt = j
	}
	if p.GetPrivateKeyJwtConfig() != nil && c.authType != authPrivateKeyJWT {
		// Envoy reads it only then; set otherwise it would do nothing.
		return errors.New("private_key_jwt_config: only read when auth_type is PRIVATE_KEY_JWT")
	}
	return nil
}

// compileAuthorization compiles the authorization request's fixed parts.
func (c *config) compileAuthorization(p *oauth2v3.OAuth2Config) error {
	ep := p.GetAuthorizationEndpoint()
	u, err := url.Parse(ep)
	if err != nil || u.Scheme == "" || u.Host == "" {
		//lint:ignore ST1005 Envoy's words, period included.
		return fmt.Errorf("authorization_endpoint: OAuth2 filter: invalid authorization endpoint URL '%s' in config.", ep)
	}
	q := map[string][]string{}
	if u.RawQuery != "" {
		for pair := range strings.SplitSeq(u.RawQuery, "&") {
			if pair == "" {
				continue
			}
			k, v, _ := strings.Cut(pair, "=")
			q[k] = append(q[k], v)
		}
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	c.authorizationURL = u.String()
	scopes := p.GetAuthScopes()
	if len(scopes) == 0 {
		scopes = []string{defaultScope}
	}
	q["client_id"] = []string{urlEncode(c.clientID)}
	q["response_type"] = []string{"code"}
	q["scope"] = []string{urlEncode(strings.Join(scopes, " "))}
	c.authorizationQuery = q
	var b strings.Builder
	for _, r := range p.GetResources() {
		b.WriteString("&resource=")
		b.WriteString(urlEncode(r))
	}
	c.resources = b.String()
	if c.endSessionEndpoint != "" {
		oidc := false
		for _, s := range p.GetAuthScopes() {
			oidc = oidc || s == scopeOpenID
		}
		if !oidc {
			//lint:ignore ST1005 Envoy's words, period included.
			return errors.New("end_session_endpoint: OAuth2 filter: end session endpoint is only supported for OpenID Connect.")
		}
	}
	return nil
}

// authorizationLocation is the authorization request's URL with the
// flow's parameters; the query is in name order, as Envoy writes it.
func (c *config) authorizationLocation(extra map[string]string) string {
	names := make([]string, 0, len(c.authorizationQuery)+len(extra))
	for k := range c.authorizationQuery {
		if _, ok := extra[k]; !ok {
			names = append(names, k)
		}
	}
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(c.authorizationURL)
	for i, k := range names {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		if v, ok := extra[k]; ok {
			b.WriteString(k + "=" + v)
			continue
		}
		for j, v := range c.authorizationQuery[k] {
			if j > 0 {
				b.WriteByte('&')
			}
			b.WriteString(k + "=" + v)
		}
	}
	b.WriteString(c.resources)
	return b.String()
}

// compileSecrets resolves the client secret (token_secret) and the HMAC
// secret, as Envoy requires them.
func (c *config) compileSecrets(p *oauth2v3.OAuth2Config, ctx httpfilter.Context) error {
	cr := p.GetCredentials()
	if cr == nil {
		return errors.New("credentials: required")
	}
	if c.authType != authTLSClient {
		if cr.GetTokenSecret() == nil {
			// Envoy's words.
			return errors.New("credentials.token_secret: token_secret is required when auth_type is not TLS_CLIENT_AUTH")
		}
		resolve := genericsecret.Resolve
		if c.authType == authPrivateKeyJWT {
			resolve = func(svc any, sc *tlsv3.SdsSecretConfig, what string) (*genericsecret.Value, error) {
				return genericsecret.ResolveEntries(svc, sc, what, secretPrivateKey, secretKeyID)
			}
		}
		s, err := resolve(ctx.Services, cr.GetTokenSecret(), "token")
		if err != nil {
			return fmt.Errorf("credentials.token_secret%w", err)
		}
		c.clientSecret = s
		if c.authType == authPrivateKeyJWT {
			if err := c.checkPrivateKey(); err != nil {
				return fmt.Errorf("credentials.token_secret: %w", err)
			}
		}
	}
	if cr.GetHmacSecret() == nil {
		return errors.New("credentials.hmac_secret: required")
	}
	s, err := genericsecret.Resolve(ctx.Services, cr.GetHmacSecret(), "HMAC")
	if err != nil {
		return fmt.Errorf("credentials.hmac_secret%w", err)
	}
	c.hmacSecret = s
	return nil
}

// secrets are the current client and HMAC secrets; ok is false while
// one the filter needs has no value yet (Envoy answers 503 then).
func (c *config) secrets() (client, hmacKey []byte, ok bool) {
	hmacKey = c.hmacSecret.Bytes()
	if c.clientSecret != nil {
		client = c.clientSecret.Bytes()
	}
	if c.authType == authPrivateKeyJWT {
		// The key is read when the assertion is signed.
		pemBytes, _ := c.signingKey()
		return nil, hmacKey, len(hmacKey) > 0 && len(pemBytes) > 0
	}
	return client, hmacKey, len(hmacKey) > 0 && (c.authType == authTLSClient || len(client) > 0)
}

// headerFormatter compiles a value with request header operators
// (%REQ(...)% and the other command operators of header values).
func headerFormatter(v, path string) (*accesslog.Formatter, error) {
	f, err := accesslog.Text(accesslog.TranslateLegacyHeaderFormat(v), false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// compilePathMatcher compiles a PathMatcher.
func compilePathMatcher(m *matcherv3.PathMatcher, path string) (router.StringMatcher, error) {
	if m.GetPath() == nil {
		return router.StringMatcher{}, fmt.Errorf("%s.path: required", path)
	}
	sm, err := router.CompileStringMatcher(m.GetPath())
	if err != nil {
		return sm, fmt.Errorf("%s.path.%w", path, err)
	}
	return sm, nil
}

// compileHeaderMatchers compiles a list of HeaderMatchers, any of which
// matching is a match.
func compileHeaderMatchers(hs []*routev3.HeaderMatcher, path string) ([]router.HeaderMatch, error) {
	out := make([]router.HeaderMatch, 0, len(hs))
	for i, h := range hs {
		m, err := router.CompileHeader(h)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].%w", path, i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// anyMatches reports whether one of ms matches req.
func anyMatches(ms []router.HeaderMatch, req *router.Request) bool {
	for i := range ms {
		if ms[i].Matches(req) {
			return true
		}
	}
	return false
}

// urlEncode percent-encodes every byte but the unreserved characters of
// RFC 3986, as Envoy's PercentEncoding::urlEncode.
func urlEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '.' || ch == '_' || ch == '~' {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[ch>>4])
		b.WriteByte(hexDigits[ch&15])
	}
	return b.String()
}

// formEncode percent-encodes the values of the token requests, as
// Envoy's PercentEncoding::encode does.
func formEncode(s, reserved string) string { return httpfilter.PercentEncode(s, reserved) }
