package oauth2

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

const testHMAC = "hmac-secret"

// fakeServices reaches the token endpoint's cluster by address and finds
// secrets by name.
type fakeServices struct {
	addr    string
	secrets map[string]*tlsconfig.Provider
}

func (f fakeServices) OpenGRPC(*corev3.GrpcService) (*grpcservice.Channel, error) {
	return nil, errors.New("no gRPC")
}

func (f fakeServices) Cluster(string) grpcservice.Cluster { return dialer(f.addr) }

func (f fakeServices) Secret(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error) {
	if p, ok := f.secrets[sc.GetName()]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("name: Unknown static secret: %s", sc.GetName())
}

// dialer is a cluster of one address.
type dialer = grpcservicetest.Dialer

func genericSecret(name, value string) *tlsconfig.Provider {
	return tlsconfig.NewProvider(name, &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
		Secret: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: value}}}}})
}

func exactPath(p string) *matcherv3.PathMatcher {
	return &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: p}}}}
}

func headerExact(name, value string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
		StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: value}}}}
}

// baseConfig is a configuration whose token endpoint is addr.
func baseConfig() *oauth2v3.OAuth2Config {
	return &oauth2v3.OAuth2Config{
		TokenEndpoint:         &corev3.HttpUri{Uri: "https://idp.example/token", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "idp"}, Timeout: durationpb.New(2 * time.Second)},
		AuthorizationEndpoint: "https://idp.example/authorize?prompt=login",
		RedirectUri:           "%REQ(x-forwarded-proto)%://%REQ(:authority)%/callback",
		RedirectPathMatcher:   exactPath("/callback"),
		SignoutPath:           exactPath("/signout"),
		Credentials: &oauth2v3.OAuth2Credentials{
			ClientId:       "app",
			TokenSecret:    &tlsv3.SdsSecretConfig{Name: "token"},
			TokenFormation: &oauth2v3.OAuth2Credentials_HmacSecret{HmacSecret: &tlsv3.SdsSecretConfig{Name: "hmac"}},
		},
	}
}

// harness compiles configurations against a token endpoint served by
// handler.
type harness struct {
	t     testing.TB
	store *stats.Store
	svc   fakeServices
	now   time.Time
}

func newHarness(t testing.TB, handler http.Handler) *harness {
	t.Helper()
	addr := "127.0.0.1:1"
	if handler != nil {
		srv := httptest.NewServer(handler)
		t.Cleanup(srv.Close)
		addr = srv.Listener.Addr().String()
	}
	return &harness{t: t, store: stats.NewStore(), now: time.Unix(1700000000, 0),
		svc: fakeServices{addr: addr, secrets: map[string]*tlsconfig.Provider{
			"token": genericSecret("token", "s3cret"), "hmac": genericSecret("hmac", testHMAC)}}}
}

func (h *harness) compile(p *oauth2v3.OAuth2Config) *filterConfig {
	h.t.Helper()
	fc, err := Factory{}.Compile(&oauth2v3.OAuth2{Config: p}, httpfilter.Context{
		Name: "oauth", Stats: h.store, StatPrefix: "http.t.", Services: h.svc, Now: func() time.Time { return h.now },
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return fc.(*filterConfig)
}

func (h *harness) counter(name string) uint64 { return h.store.Counter("http.t." + name).Value() }

// run decodes a request and, unless it was answered, nothing more; it
// encodes the reply (or a 200 response) so that the filter's headers land.
func run(fc *filterConfig, s *httpfiltertest.Stream) httpfilter.Status {
	f := fc.NewFilter().(*filter)
	st := f.DecodeHeaders(s)
	f.EncodeHeaders(s)
	return st
}

// sessionCookies are the cookies of a session as the filter writes them
// (tokens not encrypted), for host.
func sessionCookies(host string, expires int64, access, id, refresh string) string {
	exp := strconv.FormatInt(expires, 10)
	return "OauthHMAC=" + envoyHMAC(testHMAC, host+"\n"+exp+"\n"+access+"\n"+id+"\n"+refresh) + "; OauthExpires=" + exp +
		"; BearerToken=" + access + "; IdToken=" + id + "; RefreshToken=" + refresh
}

func jwtWithClaims(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + ".sig"
}

func TestValidSessionPasses(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.ForwardBearerToken = true
	cfg.DisableTokenEncryption = true
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/app", "cookie", sessionCookies("host", 1700000060, "at", "id", "rt")+"; OauthNonce.x=1; Other=2",
		"authorization", "Bearer forged", "x-envoy-oauth-status", "spoofed")
	if st := run(fc, s); st != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("a valid session: %v %+v", st, s.Reply)
	}
	if v, _ := s.ReqHeaders.Get("authorization"); v != "Bearer at" {
		t.Fatalf("authorization = %q", v)
	}
	if v, _ := s.ReqHeaders.Get("cookie"); v != "BearerToken=at; IdToken=id; Other=2" {
		t.Fatalf("cookies upstream = %q", v)
	}
	if _, ok := s.ReqHeaders.Get("x-envoy-oauth-status"); ok {
		t.Fatal("the client's x-envoy-oauth-status went upstream")
	}
	if h.counter("oauth_success") != 1 {
		t.Fatal("oauth_success not counted")
	}
	// Expired: redirected (no refresh: the request has no refresh token).
	h.now = time.Unix(1700000060, 0)
	s = httpfiltertest.NewStream("GET", "/app", "cookie", sessionCookies("host", 1700000060, "at", "id", ""))
	if run(fc, s); s.Reply == nil || s.Reply.Status != 302 {
		t.Fatalf("an expired session: %+v", s.Reply)
	}
	// Another host: the HMAC covers the Host.
	h.now = time.Unix(1700000000, 0)
	s = httpfiltertest.NewStream("GET", "/app", "cookie", sessionCookies("other", 1700000060, "at", "id", ""))
	if run(fc, s); s.Reply == nil || s.Reply.Status != 302 {
		t.Fatalf("a session of another host: %+v", s.Reply)
	}
}

func TestCookieDomainAndPreservedAuthorization(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.Credentials.CookieDomain = "example.com"
	cfg.PreserveAuthorizationHeader = true
	cfg.DisableTokenEncryption = true
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/app", "cookie", sessionCookies("example.com", 1700000060, "at", "", ""), "authorization", "Basic kept")
	s.Req.Host = "www.example.com"
	if run(fc, s); s.Reply != nil {
		t.Fatalf("a session of the cookie domain: %+v", s.Reply)
	}
	if v, _ := s.ReqHeaders.Get("authorization"); v != "Basic kept" {
		t.Fatalf("authorization = %q", v)
	}
}

func TestRedirectToServer(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.AuthScopes = []string{"openid", "profile"}
	cfg.Resources = []string{"https://api/"}
	cfg.Credentials.CookieDomain = "example.com"
	cfg.CookieConfigs = &oauth2v3.CookieConfigs{OauthNonceCookieConfig: &oauth2v3.CookieConfig{SameSite: oauth2v3.CookieConfig_LAX}}
	cfg.CsrfTokenExpiresIn = durationpb.New(30 * time.Second)
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/app?a=b", "x-forwarded-proto", "https", "authorization", "Bearer x")
	s.Req.Scheme = "https"
	if st := run(fc, s); st != httpfilter.Stop || s.Reply.Status != 302 || s.Reply.Details != detailsMissingCredentials {
		t.Fatalf("reply = %+v", s.Reply)
	}
	loc, _ := s.RespHeaders.Get("location")
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Host != "idp.example" || q.Get("prompt") != "login" || q.Get("client_id") != "app" || q.Get("scope") != "openid profile" ||
		q.Get("redirect_uri") != "https://host/callback" || q.Get("response_type") != "code" || q["resource"][0] != "https://api/" {
		t.Fatalf("location = %s", loc)
	}
	if !strings.HasPrefix(u.RawQuery, "client_id=app&code_challenge=") {
		t.Fatalf("query not in name order: %s", u.RawQuery)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(q.Get("state"))
	var st flowState
	if err := json.Unmarshal(raw, &st); err != nil || st.URL != "https://host/app?a=b" || !validCSRFToken([]byte(testHMAC), st.CSRFToken) {
		t.Fatalf("state = %s", raw)
	}
	var nonce string
	for _, f := range setCookies(s) {
		if strings.HasPrefix(f, "OauthNonce."+st.FlowID+"=") {
			nonce = f
		}
	}
	if want := "OauthNonce." + st.FlowID + "=" + st.CSRFToken + ";domain=example.com;path=/;Max-Age=30;secure;HttpOnly;SameSite=Lax"; nonce != want {
		t.Fatalf("nonce cookie = %q, want %q", nonce, want)
	}
	if h.counter("oauth_unauthorized_rq") != 1 {
		t.Fatal("oauth_unauthorized_rq not counted")
	}
}

func setCookies(s *httpfiltertest.Stream) []string { return s.RespHeaders.Values("set-cookie") }

func TestAllowedRedirectDomainsAndOriginalRequestURI(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.OriginalRequestUri = "%REQ(x-forwarded-proto)%://%REQ(x-forwarded-host)%"
	cfg.RedirectUri = "https://%REQ(x-forwarded-host)%/callback"
	cfg.AllowedRedirectDomains = []string{"app.example"}
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/x", "x-forwarded-proto", "https", "x-forwarded-host", "app.example")
	if run(fc, s); s.Reply.Status != 302 {
		t.Fatalf("an allowed host: %+v", s.Reply)
	}
	loc, _ := s.RespHeaders.Get("location")
	u, _ := url.Parse(loc)
	raw, _ := base64.RawURLEncoding.DecodeString(u.Query().Get("state"))
	if !strings.Contains(string(raw), `"url":"https://app.example/x"`) {
		t.Fatalf("state = %s", raw)
	}
	s = httpfiltertest.NewStream("GET", "/x", "x-forwarded-proto", "https", "x-forwarded-host", "evil.example")
	if run(fc, s); s.Reply.Status != 401 || s.Reply.Body != "OAuth flow failed." ||
		s.Reply.Details != "authority_or_original_request_uri_failed_domain_allow-list_validation:_https://evil.example" {
		t.Fatalf("a host not allowed: %+v", s.Reply)
	}
	if h.counter("oauth_failure") != 1 {
		t.Fatal("oauth_failure not counted")
	}
}

func TestAllowFailedMatcher(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.AllowFailedMatcher = []*routev3.HeaderMatcher{headerExact("x-optional", "1")}
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/x", "x-optional", "1", "cookie", "BearerToken=bad; OauthHMAC=bad; Keep=1", "x-envoy-oauth-failure-reason", "spoofed")
	if st := run(fc, s); st != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("allow_failed: %v %+v", st, s.Reply)
	}
	status, _ := s.ReqHeaders.Get(headerOAuthStatus)
	reason, _ := s.ReqHeaders.Get(headerOAuthFailureReason)
	cookies, _ := s.ReqHeaders.Get("cookie")
	if status != "failed" || !strings.HasPrefix(reason, "Unauthorized, and forwarding as unauthorized") || cookies != "Keep=1" {
		t.Fatalf("status %q reason %q cookies %q", status, reason, cookies)
	}
	if h.counter("oauth_allow_failed_passthrough") != 1 {
		t.Fatal("oauth_allow_failed_passthrough not counted")
	}
	// Never on the callback.
	s = httpfiltertest.NewStream("GET", "/callback?code=1", "x-optional", "1")
	if run(fc, s); s.Reply == nil || s.Reply.Status != 401 {
		t.Fatalf("a callback with allow_failed: %+v", s.Reply)
	}
}

func TestSignOutWithEndSession(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.AuthScopes = []string{"openid"}
	cfg.EndSessionEndpoint = "https://idp.example/logout"
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/signout", "cookie", "IdToken=idt; CodeVerifier.f1=x")
	if run(fc, s); s.Reply.Status != 302 || s.Reply.Details != detailsSignOut {
		t.Fatalf("sign-out: %+v", s.Reply)
	}
	if loc, _ := s.RespHeaders.Get("location"); loc != "https://idp.example/logout?id_token_hint=idt&client_id=app&post_logout_redirect_uri=http%3A%2F%2Fhost%2F" {
		t.Fatalf("location = %q", loc)
	}
	if got := setCookies(s); len(got) != 6 || got[5] != "CodeVerifier.f1=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT" {
		t.Fatalf("set-cookie = %q", got)
	}
	cfg.PostLogoutRedirectUri = &oauth2v3.PostLogoutRedirectUri{Config: &oauth2v3.PostLogoutRedirectUri_Uri{Uri: "https://%REQ(:authority)%/bye"}}
	s = httpfiltertest.NewStream("GET", "/signout")
	if run(h.compile(cfg), s); s.Reply.Status != 302 {
		t.Fatal(s.Reply)
	}
	if loc, _ := s.RespHeaders.Get("location"); loc != "https://idp.example/logout?id_token_hint=&client_id=app&post_logout_redirect_uri=https%3A%2F%2Fhost%2Fbye" {
		t.Fatalf("location = %q", loc)
	}
	cfg.PostLogoutRedirectUri = &oauth2v3.PostLogoutRedirectUri{Config: &oauth2v3.PostLogoutRedirectUri_Disabled{Disabled: true}}
	s = httpfiltertest.NewStream("GET", "/signout")
	if run(h.compile(cfg), s); s.Reply.Status != 302 {
		t.Fatal(s.Reply)
	}
	if loc, _ := s.RespHeaders.Get("location"); loc != "https://idp.example/logout?id_token_hint=&client_id=app" {
		t.Fatalf("location = %q", loc)
	}
}

func TestSecretsNotReady(t *testing.T) {
	h := newHarness(t, nil)
	h.svc.secrets["hmac"] = tlsconfig.NewProvider("hmac", nil) // from SDS, not come yet
	fc := h.compile(baseConfig())
	s := httpfiltertest.NewStream("GET", "/x")
	if run(fc, s); s.Reply.Status != 503 || s.Reply.Body != "Service Unavailable" || s.Reply.Details != "OAuth2_secrets_are_not_ready" {
		t.Fatalf("reply = %+v", s.Reply)
	}
	if err := h.svc.secrets["hmac"].Update(genericSecret("hmac", testHMAC).Secret()); err != nil {
		t.Fatal(err)
	}
	s = httpfiltertest.NewStream("GET", "/x")
	if run(fc, s); s.Reply.Status != 302 {
		t.Fatalf("after the secret came: %+v", s.Reply)
	}
}

// tokenServer answers token requests with answer and records them.
type tokenServer struct {
	mu     sync.Mutex
	forms  []url.Values
	status int
	answer string
}

func (ts *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	ts.mu.Lock()
	ts.forms = append(ts.forms, r.PostForm)
	status, answer := ts.status, ts.answer
	ts.mu.Unlock()
	w.WriteHeader(status)
	fmt.Fprint(w, answer)
}

// startFlow runs the redirect and returns the callback's stream, with
// the flow's cookies.
func startFlow(t *testing.T, fc *filterConfig) *httpfiltertest.Stream {
	t.Helper()
	s := httpfiltertest.NewStream("GET", "/app", "x-forwarded-proto", "http")
	run(fc, s)
	loc, _ := s.RespHeaders.Get("location")
	u, err := url.Parse(loc)
	if err != nil || s.Reply.Status != 302 {
		t.Fatalf("redirect: %+v %q", s.Reply, loc)
	}
	var cookies []string
	for _, c := range setCookies(s) {
		cookies = append(cookies, strings.Split(c, ";")[0])
	}
	return httpfiltertest.NewStream("GET", "/callback?code=c0de&state="+u.Query().Get("state"), "cookie", strings.Join(cookies, "; "), "x-forwarded-proto", "http")
}

func TestCallbackExchange(t *testing.T) {
	ts := &tokenServer{status: 200}
	h := newHarness(t, ts)
	idToken := jwtWithClaims(`{"exp":1700000300}`)
	ts.answer = `{"access_token":"at","id_token":"` + idToken + `","refresh_token":"rt","expires_in":"120"}`
	cfg := baseConfig()
	cfg.AuthType = oauth2v3.OAuth2Config_TLS_CLIENT_AUTH
	cfg.Credentials.TokenSecret = nil
	cfg.DisableTokenEncryption = true
	cfg.DisableRefreshTokenSetCookie = true
	fc := h.compile(cfg)
	s := startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 302 || s.Reply.Details != detailsLoggedIn {
		t.Fatalf("callback: %+v", s.Reply)
	}
	if loc, _ := s.RespHeaders.Get("location"); loc != "http://host/app" {
		t.Fatalf("location = %q", loc)
	}
	form := ts.forms[0]
	if form.Get("client_id") != "app" || form.Has("client_secret") || form.Get("code") != "c0de" || form.Get("redirect_uri") != "http://host/callback" || form.Get("code_verifier") == "" {
		t.Fatalf("token request = %v", form)
	}
	got := strings.Join(setCookies(s), "\n")
	hmacValue := envoyHMAC(testHMAC, "host\n1700000120\nat\n"+idToken+"\n")
	for _, want := range []string{
		"OauthHMAC=" + hmacValue + ";path=/;Max-Age=120;secure;HttpOnly",
		"OauthExpires=1700000120;path=/;Max-Age=120;secure;HttpOnly",
		"BearerToken=at;path=/;Max-Age=120;secure;HttpOnly",
		"IdToken=" + idToken + ";path=/;Max-Age=300;secure;HttpOnly",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("set-cookie lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "RefreshToken=rt") {
		t.Errorf("disable_refresh_token_set_cookie set it:\n%s", got)
	}

	// A refused exchange: 401 with the endpoint's answer in the details,
	// and the flow's cookies deleted.
	ts.mu.Lock()
	ts.status, ts.answer = 400, `{"error":"invalid_grant"}`
	ts.mu.Unlock()
	s = startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 401 || !strings.HasPrefix(s.Reply.Details, "Failed_to_get_access_token:_response_code:_400") {
		t.Fatalf("refused exchange: %+v", s.Reply)
	}
	if len(setCookies(s)) != 4 {
		t.Fatalf("flow cookie deletions = %q", setCookies(s))
	}
	// No expiry anywhere: refused, as Envoy does.
	ts.mu.Lock()
	ts.status, ts.answer = 200, `{"access_token":"at"}`
	ts.mu.Unlock()
	s = startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 401 || !strings.HasPrefix(s.Reply.Details, "No_default_or_explicit_access_token_expiration") {
		t.Fatalf("no expiry: %+v", s.Reply)
	}
	cfg.DefaultExpiresIn = durationpb.New(time.Minute)
	cfg.UseRefreshToken = wrapperspb.Bool(false)
	fc = h.compile(cfg)
	s = startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 302 || !strings.Contains(strings.Join(setCookies(s), "\n"), "OauthExpires=1700000060;path=/;Max-Age=60") {
		t.Fatalf("default_expires_in: %+v %q", s.Reply, setCookies(s))
	}
}

func TestCompileErrors(t *testing.T) {
	h := newHarness(t, nil)
	for name, tc := range map[string]struct {
		edit func(*oauth2v3.OAuth2Config)
		want string
	}{
		"retry_on": {func(c *oauth2v3.OAuth2Config) { c.RetryPolicy = &corev3.RetryPolicy{RetryOn: "5xx"} }, "config.retry_policy.retry_on: not supported by Outrigger for the token endpoint"},
		"id host":  {func(c *oauth2v3.OAuth2Config) { c.ForwardIdToken = &oauth2v3.OAuth2TokenForwarding{Header: "Host"} }, "config.forward_id_token.header: \"Host\": pseudo-headers and host"},
		"id bearer": {func(c *oauth2v3.OAuth2Config) {
			c.ForwardBearerToken = true
			c.ForwardIdToken = &oauth2v3.OAuth2TokenForwarding{Header: "Authorization"}
		}, "config.forward_id_token.header: the ID token cannot be forwarded in Authorization when forward_bearer_token is set"},
		"jwt without auth type": {func(c *oauth2v3.OAuth2Config) { c.PrivateKeyJwtConfig = &oauth2v3.PrivateKeyJwtConfig{} }, "config.private_key_jwt_config: only read when auth_type is PRIVATE_KEY_JWT"},
		"jwt not a key":         {func(c *oauth2v3.OAuth2Config) { c.AuthType = oauth2v3.OAuth2Config_PRIVATE_KEY_JWT }, "config.credentials.token_secret: failed to parse the private key PEM"},
		"chunks": {func(c *oauth2v3.OAuth2Config) {
			c.TokenCookieChunking = &oauth2v3.TokenCookieChunking{MaxChunks: wrapperspb.UInt32(17)}
		}, "config.token_cookie_chunking.max_chunks: must be between 2 and 16"},
		"no secret":  {func(c *oauth2v3.OAuth2Config) { c.Credentials.TokenSecret = nil }, "config.credentials.token_secret: token_secret is required when auth_type is not TLS_CLIENT_AUTH"},
		"unknown":    {func(c *oauth2v3.OAuth2Config) { c.Credentials.TokenSecret.Name = "nope" }, "config.credentials.token_secret.name: Unknown static secret: nope"},
		"bad url":    {func(c *oauth2v3.OAuth2Config) { c.AuthorizationEndpoint = "/relative" }, "config.authorization_endpoint: OAuth2 filter: invalid authorization endpoint URL '/relative' in config."},
		"bad format": {func(c *oauth2v3.OAuth2Config) { c.RedirectUri = "%REQ(%" }, "config.redirect_uri:"},
		"not generic": {func(c *oauth2v3.OAuth2Config) {
			h.svc.secrets["cert"] = tlsconfig.NewProvider("cert", &tlsv3.Secret{Name: "cert", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{}}})
			c.Credentials.TokenSecret.Name = "cert"
		}, `config.credentials.token_secret.name: invalid token secret configuration (secret "cert" is not a generic_secret)`},
	} {
		cfg := baseConfig()
		tc.edit(cfg)
		_, err := Factory{}.Compile(&oauth2v3.OAuth2{Config: cfg}, httpfilter.Context{Name: "oauth", Stats: h.store, Services: h.svc})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	// Without a configuration, only routes with their own enable it.
	fc, err := Factory{}.Compile(&oauth2v3.OAuth2{}, httpfilter.Context{Name: "oauth", Stats: h.store, Services: h.svc})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/x")
	if run(fc.(*filterConfig), s); s.Reply != nil {
		t.Fatalf("no configuration: %+v", s.Reply)
	}
	rc, err := Factory{}.CompileRoute(&oauth2v3.OAuth2PerRoute{Config: baseConfig()}, httpfilter.Context{Name: "oauth", Stats: h.store, Services: h.svc})
	if err != nil {
		t.Fatal(err)
	}
	s = httpfiltertest.NewStream("GET", "/x")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"oauth": {rc}}
	if run(fc.(*filterConfig), s); s.Reply == nil || s.Reply.Status != 302 {
		t.Fatalf("a route's configuration: %+v", s.Reply)
	}
}

func TestTokenEndpointDown(t *testing.T) {
	h := newHarness(t, nil) // nothing listens at the cluster's address
	fc := h.compile(baseConfig())
	s := startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 401 || s.Reply.Body != unauthorizedBody || s.Reply.Details != "Failed_to_get_access_token:_response_code:_503,_response_body:_upstream_connect_error_or_disconnect/reset_before_headers._reset_reason:_remote_connection_failure" {
		t.Fatalf("reply = %+v", s.Reply)
	}
	if h.counter("oauth_failure") != 1 || h.counter("oauth_success") != 0 {
		t.Fatal("oauth_failure not counted")
	}
}
