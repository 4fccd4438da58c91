package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	jose "github.com/go-jose/go-jose/v4"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	oauth2Type     = "type.googleapis.com/envoy.extensions.filters.http.oauth2.v3.OAuth2"
	oauth2PerRoute = "type.googleapis.com/envoy.extensions.filters.http.oauth2.v3.OAuth2PerRoute"
)

// oauthProvider is an OAuth 2.0 authorization server for the tests: an
// authorization endpoint that logs every user in at once and redirects
// back with a code, and a token endpoint that checks the client's
// credentials, the code, its redirect_uri and PKCE verifier, and hands out
// access, ID and refresh tokens (refresh tokens are accepted until
// revoked).
type oauthProvider struct {
	clientID, clientSecret string
	// expiresIn is the lifetime the token endpoint announces.
	expiresIn atomic.Int64
	// hang holds /hang token requests until closed.
	hang chan struct{}

	mu        sync.Mutex
	codes     map[string]codeGrant
	refreshes map[string]bool
	// authorizeQueries are the raw queries of the authorization requests;
	// tokenForms the token requests' forms, with their Authorization.
	authorizeQueries []string
	tokenForms       []url.Values
	tokenAuth        []string
	issued           int

	// assertionKey, when set, authenticates clients by their
	// PRIVATE_KEY_JWT assertion, verified with it, instead of the secret;
	// assertionAud is the audience it must name.
	assertionKey any
	assertionAud string
	// busy answers that many token requests 503 before serving any.
	busy atomic.Int32
	// accessPad lengthens the access tokens by that many characters.
	accessPad int
}

// codeGrant is what an authorization code was issued for.
type codeGrant struct{ challenge, redirectURI string }

func newOAuthProvider() *oauthProvider {
	p := &oauthProvider{clientID: "app", clientSecret: "s3cr:et", hang: make(chan struct{}),
		codes: map[string]codeGrant{}, refreshes: map[string]bool{}}
	p.expiresIn.Store(600)
	return p
}

func randomString() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServeHTTP implements http.Handler.
func (p *oauthProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/authorize":
		p.authorize(w, r)
	case "/token":
		p.token(w, r)
	case "/hang":
		<-p.hang
		http.Error(w, "released", http.StatusServiceUnavailable)
	default:
		http.NotFound(w, r)
	}
}

func (p *oauthProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	p.authorizeQueries = append(p.authorizeQueries, r.URL.RawQuery)
	p.mu.Unlock()
	if q.Get("client_id") != p.clientID || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := randomString()
	p.mu.Lock()
	p.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
	p.mu.Unlock()
	http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
}

func (p *oauthProvider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad token request", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokenForms = append(p.tokenForms, f)
	p.tokenAuth = append(p.tokenAuth, r.Header.Get("Authorization"))
	if p.busy.Load() > 0 {
		p.busy.Add(-1)
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	if p.assertionKey != nil {
		// RFC 7523: the assertion authenticates the client.
		secret = p.clientSecret
		if err := p.checkAssertion(f); err != nil {
			id = "unauthenticated: " + err.Error()
		}
	}
	if id != p.clientID || secret != p.clientSecret {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[f.Get("code")]
		delete(p.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || g.redirectURI != f.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
	case "refresh_token":
		if !p.refreshes[f.Get("refresh_token")] {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
	default:
		http.Error(w, "unsupported grant", http.StatusBadRequest)
		return
	}
	p.issued++
	refresh := fmt.Sprintf("rt-%d", p.issued)
	p.refreshes[refresh] = true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": fmt.Sprintf("at-%d", p.issued) + strings.Repeat("x", p.accessPad), "token_type": "Bearer",
		"id_token": fmt.Sprintf("id-%d", p.issued), "refresh_token": refresh,
		"expires_in": p.expiresIn.Load(),
	})
}

// checkAssertion verifies a token request's client assertion: its type,
// its signature with assertionKey, and its claims (RFC 7523 section 3).
func (p *oauthProvider) checkAssertion(f url.Values) error {
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return fmt.Errorf("client_assertion_type %q", f.Get("client_assertion_type"))
	}
	sig, err := jose.ParseSignedCompact(f.Get("client_assertion"), []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
	if err != nil {
		return err
	}
	raw, err := sig.Verify(p.assertionKey)
	if err != nil {
		return err
	}
	var c struct {
		Iss, Sub, Aud, Jti string
		Exp, Iat           int64
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	now := time.Now().Unix()
	if c.Iss != p.clientID || c.Sub != p.clientID || c.Aud != p.assertionAud || c.Jti == "" || c.Iat > now+5 || c.Exp < now || c.Exp != c.Iat+60 {
		return fmt.Errorf("claims %s", raw)
	}
	return nil
}

// revokeAll makes every refresh token issued so far invalid.
func (p *oauthProvider) revokeAll() {
	p.mu.Lock()
	clear(p.refreshes)
	p.mu.Unlock()
}

// lastToken is the last token request's form and Authorization header.
func (p *oauthProvider) lastToken() (url.Values, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tokenForms) == 0 {
		return nil, ""
	}
	return p.tokenForms[len(p.tokenForms)-1], p.tokenAuth[len(p.tokenAuth)-1]
}

// lastAuthorize is the last authorization request's raw query.
func (p *oauthProvider) lastAuthorize() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.authorizeQueries) == 0 {
		return ""
	}
	return p.authorizeQueries[len(p.authorizeQueries)-1]
}

// loopbackJar is a cookie jar that treats the plaintext loopback proxy as
// a secure origin, as browsers treat localhost: the filter's cookies are
// all Secure.
type loopbackJar struct{ j *cookiejar.Jar }

func newLoopbackJar() loopbackJar {
	j, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return loopbackJar{j}
}

func secureURL(u *url.URL) *url.URL {
	c := *u
	c.Scheme = "https"
	return &c
}

func (l loopbackJar) SetCookies(u *url.URL, cs []*http.Cookie) { l.j.SetCookies(secureURL(u), cs) }
func (l loopbackJar) Cookies(u *url.URL) []*http.Cookie        { return l.j.Cookies(secureURL(u)) }

// cookieHeader is the Cookie header the jar sends to u, with the named
// cookies replaced (or left out, for an empty value).
func (l loopbackJar) cookieHeader(u string, replace map[string]string) string {
	pu, err := url.Parse(u)
	Expect(err).NotTo(HaveOccurred())
	var parts []string
	for _, c := range l.Cookies(pu) {
		v := c.Value
		if r, ok := replace[c.Name]; ok {
			if r == "" {
				continue
			}
			v = r
		}
		parts = append(parts, c.Name+"="+v)
	}
	return strings.Join(parts, "; ")
}

// cookieNames are the names of the cookies the jar holds for u.
func (l loopbackJar) cookieNames(u string) []string {
	pu, err := url.Parse(u)
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, c := range l.Cookies(pu) {
		names = append(names, c.Name)
	}
	return names
}

var _ = Describe("The OAuth2 filter", func() {
	It("runs the authorization code flow with a real provider: login, forwarded token, tampering, deny, pass-through, refresh, sign-out, endpoint failures", func() {
		idp := newOAuthProvider()
		idpPort := portNum(httpTestUpstream(idp, false))
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "path=%s auth=%q cookie=%q", r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Cookie"))
		}), false))
		down := freePort() // nothing listens there

		port := freePort()
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		authorizeURL := fmt.Sprintf("http://127.0.0.1:%d/authorize", idpPort)
		oauthConfig := func(prefix, cluster, tokenPath, timeout, extra string) string {
			return `{token_endpoint: {cluster: ` + cluster + `, uri: "http://idp.example` + tokenPath + `", timeout: ` + timeout + `},
				authorization_endpoint: "` + authorizeURL + `",
				redirect_uri: "http://%REQ(:authority)%` + prefix + `/callback",
				redirect_path_matcher: {path: {exact: "` + prefix + `/callback"}},
				signout_path: {path: {exact: "` + prefix + `/signout"}},
				credentials: {client_id: app, token_secret: {name: token}, hmac_secret: {name: hmac}},
				forward_bearer_token: true` + extra + `}`
		}
		perRoute := func(cfg string) string {
			return `{oauth: ` + withType(oauth2PerRoute, `{config: `+cfg+`}`) + `}`
		}
		config := proxySpec{
			Port: port,
			HCM:  `{stat_prefix: edge, access_log: [` + stdoutLog("OAUTHLOG %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS%\n") + `]}`,
			Routes: `[{match: {prefix: /down/}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(oauthConfig("/down", "nowhere", "/token", "1s", `, stat_prefix: down.`)) + `},
				{match: {prefix: /hang/}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(oauthConfig("/hang", "idp", "/hang", "0.5s", `, stat_prefix: hang.`)) + `},
				{match: {prefix: /basic/}, route: {cluster: up}, typed_per_filter_config: ` + perRoute(oauthConfig("/basic", "idp", "/token", "2s", `, stat_prefix: basic., auth_type: BASIC_AUTH`)) + `},
				{match: {prefix: /}, route: {cluster: up}}]`,
			Filters: `[` + httpFilter("oauth", oauth2Type, `{config: `+oauthConfig("", "idp", "/token", "2s", `,
				auth_scopes: [openid, email], resources: ["https://api.example/"],
				pass_through_matcher: [{name: x-pass, string_match: {exact: "yes"}}],
				deny_redirect_matcher: [{name: x-requested-with, string_match: {exact: XMLHttpRequest}}],
				cookie_configs: {bearer_token_cookie_config: {same_site: LAX}}`)+`}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}, {Name: "idp", Port: idpPort}, {Name: "nowhere", Port: down}},
			Top: `{static_resources: {secrets: [
				{name: token, generic_secret: {secret: {inline_string: "s3cr:et"}}},
				{name: hmac, generic_secret: {secret: {inline_string: "a-long-hmac-key"}}}]}}`,
		}.YAML()
		s := Start(newDir(), config, "--file-flush-interval-msec", "50")
		// Requests stuck at /hang are released before the sidecar stops.
		DeferCleanup(func() { close(idp.hang) })

		jar := newLoopbackJar()
		browser := &http.Client{Timeout: 10 * time.Second, Jar: jar}
		// noFollow sees each answer; it sends the cookies it is given.
		noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		get := func(c *http.Client, path string, kv ...string) Response {
			GinkgoHelper()
			h := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Add(kv[i], kv[i+1])
			}
			return httpDo(c, "GET", base+path, nil, h)
		}

		By("an unauthenticated request is redirected to the authorization endpoint with Envoy's parameters and flow cookies")
		r := get(noFollow, "/app?x=1")
		Expect(r.Status).To(Equal(302))
		loc := r.Header.Get("Location")
		Expect(loc).To(HavePrefix(authorizeURL + "?client_id=app&code_challenge="))
		lu, err := url.Parse(loc)
		Expect(err).NotTo(HaveOccurred())
		Expect(lu.RawQuery).To(ContainSubstring("&code_challenge_method=S256&redirect_uri=" + url.QueryEscape(base+"/callback") + "&response_type=code&scope=openid%20email&state="))
		Expect(lu.RawQuery).To(HaveSuffix("&resource=https%3A%2F%2Fapi.example%2F"))
		state, err := base64.RawURLEncoding.DecodeString(lu.Query().Get("state"))
		Expect(err).NotTo(HaveOccurred())
		var st map[string]string
		Expect(json.Unmarshal(state, &st)).To(Succeed())
		Expect(st["url"]).To(Equal(base + "/app?x=1"))
		Expect(st["csrf_token"]).To(HavePrefix(st["flow_id"] + "."))
		setCookies := strings.Join(r.Header.Values("Set-Cookie"), "\n")
		Expect(setCookies).To(ContainSubstring("OauthNonce." + st["flow_id"] + "=" + st["csrf_token"] + ";path=/;Max-Age=600;secure;HttpOnly"))
		Expect(setCookies).To(ContainSubstring("CodeVerifier." + st["flow_id"] + "="))
		Eventually(s.Stdout).Should(ContainSubstring("OAUTHLOG /app?x=1 302 oauth.missing_credentials\n"))

		By("a browser follows the flow end to end and reaches the upstream with the access token")
		r = get(browser, "/app?x=1")
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(HavePrefix(`path=/app auth="Bearer at-1" cookie="`))
		// The upstream sees the tokens decrypted, and not the filter's own
		// cookies.
		Expect(r.Body).To(ContainSubstring("BearerToken=at-1"))
		Expect(r.Body).To(ContainSubstring("IdToken=id-1"))
		Expect(r.Body).NotTo(ContainSubstring("OauthHMAC"))
		Expect(r.Body).NotTo(ContainSubstring("RefreshToken"))
		Expect(r.Body).NotTo(ContainSubstring("OauthNonce"))
		form, auth := idp.lastToken()
		Expect(auth).To(BeEmpty())
		Expect(form.Get("grant_type")).To(Equal("authorization_code"))
		Expect(form.Get("client_secret")).To(Equal("s3cr:et"))
		Expect(form.Get("redirect_uri")).To(Equal(base + "/callback"))
		Expect(idp.lastAuthorize()).To(ContainSubstring("redirect_uri=" + url.QueryEscape(base+"/callback")))
		Expect(jar.cookieNames(base)).To(ContainElements("BearerToken", "OauthHMAC", "OauthExpires", "IdToken", "RefreshToken"))
		// The flow's cookies were deleted; the tokens are stored encrypted.
		Expect(jar.cookieNames(base)).NotTo(ContainElement(HavePrefix("OauthNonce")))
		Expect(jar.cookieHeader(base, nil)).NotTo(ContainSubstring("at-1"))
		Eventually(s.Stdout).Should(ContainSubstring("OAUTHLOG /callback?code="))
		Eventually(s.Stdout).Should(MatchRegexp(`OAUTHLOG /callback\?code=\S+ 302 oauth.logged_in\n`))

		By("the session's cookies pass; tampered ones are redirected to log in again")
		cookies := jar.cookieHeader(base, nil)
		r = get(noFollow, "/again", "Cookie", cookies, "Authorization", "Bearer forged")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix(`path=/again auth="Bearer at-1"`))
		// Without the refresh token, which would renew the session.
		for _, tamper := range []map[string]string{
			{"RefreshToken": "", "OauthHMAC": base64.StdEncoding.EncodeToString([]byte("not the hmac"))},
			{"RefreshToken": "", "BearerToken": "at-2"},
			{"RefreshToken": "", "OauthExpires": "99999999999"},
		} {
			r = get(noFollow, "/again", "Cookie", jar.cookieHeader(base, tamper))
			Expect(r.Status).To(Equal(302), "%v", tamper)
			Expect(r.Header.Get("Location")).To(HavePrefix(authorizeURL))
		}

		By("deny_redirect_matcher answers 401; pass_through_matcher skips the filter")
		r = get(noFollow, "/ajax", "X-Requested-With", "XMLHttpRequest")
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("OAuth flow failed."))
		r = get(noFollow, "/open", "X-Pass", "yes", "Authorization", "Bearer kept")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix(`path=/open auth="Bearer kept"`))

		By("a callback with a forged state is refused")
		r = get(noFollow, "/callback?code=x&state="+base64.RawURLEncoding.EncodeToString([]byte(`{"url":"http://evil.example/","csrf_token":"a.b","flow_id":"a"}`)))
		Expect(r.Status).To(Equal(401))
		Eventually(s.Stdout).Should(ContainSubstring(" 401 CSRF_token_validation_failed\n"))

		By("an expired session is renewed with the refresh token, on the way to the upstream")
		// Two seconds: the session outlives the redirect that follows the
		// login whatever the second it was set in.
		idp.expiresIn.Store(2)
		jar2 := newLoopbackJar()
		short := &http.Client{Timeout: 10 * time.Second, Jar: jar2}
		r = get(short, "/short")
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(HavePrefix(`path=/short auth="Bearer at-2"`))
		idp.expiresIn.Store(600)
		// The jar drops the access token's cookies when they expire (Max-Age
		// 2); the refresh token's stay.
		Eventually(func() []string { return jar2.cookieNames(base) }, 5*time.Second, 100*time.Millisecond).ShouldNot(ContainElement("OauthHMAC"))
		Expect(jar2.cookieNames(base)).To(ContainElement("RefreshToken"))
		resp, err := short.Get(base + "/short")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))
		Expect(strings.Join(resp.Header.Values("Set-Cookie"), "\n")).To(ContainSubstring("OauthHMAC="))
		form, _ = idp.lastToken()
		Expect(form.Get("grant_type")).To(Equal("refresh_token"))
		Expect(form.Get("refresh_token")).To(Equal("rt-2"))
		r = get(short, "/short")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix(`path=/short auth="Bearer at-3"`))

		By("a refresh the provider refuses starts a new login")
		idp.revokeAll()
		r = get(noFollow, "/short", "Cookie", "RefreshToken=rt-3")
		Expect(r.Status).To(Equal(302))
		Expect(r.Header.Get("Location")).To(HavePrefix(authorizeURL))

		By("sign-out deletes the cookies and sends the user home")
		r = get(noFollow, "/signout", "Cookie", jar.cookieHeader(base, nil))
		Expect(r.Status).To(Equal(302))
		Expect(r.Header.Get("Location")).To(Equal(base + "/"))
		Expect(r.Header.Values("Set-Cookie")).To(ContainElements(
			"OauthHMAC=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT",
			"BearerToken=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT"))
		// A browser that does not follow the redirect home (which would log
		// it in again at once).
		signoutBrowser := &http.Client{Timeout: 10 * time.Second, Jar: jar, CheckRedirect: noFollow.CheckRedirect}
		signout, err := signoutBrowser.Get(base + "/signout")
		Expect(err).NotTo(HaveOccurred())
		signout.Body.Close()
		Expect(jar.cookieNames(base)).NotTo(ContainElement("OauthHMAC"))
		Expect(get(noFollow, "/app", "Cookie", jar.cookieHeader(base, nil)).Status).To(Equal(302))

		By("BASIC_AUTH sends the client's credentials in the Authorization header")
		r = get(browser, "/basic/app")
		Expect(r.Status).To(Equal(200), r.Body)
		form, auth = idp.lastToken()
		Expect(auth).To(Equal("Basic " + base64.StdEncoding.EncodeToString([]byte("app:s3cr:et"))))
		Expect(form.Has("client_secret")).To(BeFalse())

		By("a token endpoint that is down, or that does not answer in time, ends the flow with 401")
		// New browsers: the session above (same secret) would let them in.
		r = get(&http.Client{Timeout: 10 * time.Second, Jar: newLoopbackJar()}, "/down/app")
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("OAuth flow failed."))
		start := time.Now()
		r = get(&http.Client{Timeout: 10 * time.Second, Jar: newLoopbackJar()}, "/hang/app")
		Expect(r.Status).To(Equal(401))
		Expect(time.Since(start)).To(BeNumerically("<", 8*time.Second))
		// Envoy's details: the async client's answer, the router's local
		// reply.
		Eventually(s.Stdout).Should(MatchRegexp(`OAUTHLOG /down/callback\?\S+ 401 Failed_to_get_access_token:_response_code:_503,_response_body:_upstream_connect_error_or_disconnect/reset_before_headers._reset_reason:_remote_connection_failure\n`))
		Eventually(s.Stdout).Should(MatchRegexp(`OAUTHLOG /hang/callback\?\S+ 401 Failed_to_get_access_token:_response_code:_504,_response_body:_upstream_request_timeout\n`))

		By("the secrets are redacted in /config_dump")
		dump := s.Get("/config_dump")
		Expect(dump.Status).To(Equal(200))
		Expect(dump.Body).To(ContainSubstring(`"name": "hmac"`))
		Expect(dump.Body).NotTo(ContainSubstring("a-long-hmac-key"))

		for name, want := range map[string]string{
			"http.edge.oauth_unauthorized_rq":      "8",
			"http.edge.oauth_success":              "7",
			"http.edge.oauth_failure":              "2",
			"http.edge.oauth_passthrough":          "1",
			"http.edge.oauth_refreshtoken_success": "1",
			"http.edge.oauth_refreshtoken_failure": "1",
			"down.oauth_failure":                   "1",
			"hang.oauth_failure":                   "1",
			"basic.oauth_success":                  "2",
		} {
			Expect(statValue(s, name)).To(Equal(want), name)
		}
	})

	It("reads its HMAC secret from an SDS file and follows its rotation", func() {
		dir := newDir()
		sdsFile := filepath.Join(dir, "hmac.yaml")
		hmacSecret := func(version, value string) string {
			return fmt.Sprintf(`version_info: "%s"
resources:
- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
  name: hmac
  generic_secret: {secret: {inline_string: %s}}
`, version, value)
		}
		writeFile(sdsFile, hmacSecret("1", "first-key"))
		port := freePort()
		config := proxySpec{
			Port: port,
			Filters: `[` + httpFilter("oauth", oauth2Type, `{config: {token_endpoint: {cluster: idp, uri: "http://idp/token", timeout: 1s},
				authorization_endpoint: "https://idp.example/authorize", redirect_uri: "https://%REQ(:authority)%/callback",
				redirect_path_matcher: {path: {exact: /callback}}, signout_path: {path: {exact: /signout}},
				credentials: {client_id: app, token_secret: {name: token},
					hmac_secret: {name: hmac, sds_config: {path_config_source: {path: `+sdsFile+`}}}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "idp", Port: freePort()}},
			Top:      `{static_resources: {secrets: [{name: token, generic_secret: {secret: {inline_string: s}}}]}}`,
		}.YAML()
		Start(dir, config)
		client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		// csrfKeyed reports whether the redirect's CSRF token is signed with
		// key: <flow>.<base64 HMAC-SHA256(key, flow)>.
		csrfKeyed := func(key string) bool {
			r := httpDo(client, "GET", listenerURL(port, "/app"), nil, nil)
			Expect(r.Status).To(Equal(302), r.Body)
			u, err := url.Parse(r.Header.Get("Location"))
			Expect(err).NotTo(HaveOccurred())
			raw, err := base64.RawURLEncoding.DecodeString(u.Query().Get("state"))
			Expect(err).NotTo(HaveOccurred())
			var st map[string]string
			Expect(json.Unmarshal(raw, &st)).To(Succeed())
			mac := hmac.New(sha256.New, []byte(key))
			mac.Write([]byte(st["flow_id"]))
			return st["csrf_token"] == st["flow_id"]+"."+base64.StdEncoding.EncodeToString(mac.Sum(nil))
		}
		Expect(csrfKeyed("first-key")).To(BeTrue())
		replaceFile(sdsFile, hmacSecret("2", "second-key"))
		Eventually(func() bool { return csrfKeyed("second-key") }, 10*time.Second, 100*time.Millisecond).Should(BeTrue())
	})

	It("warms its listener until its HMAC secret comes over ADS", func() {
		m := startManagementServer()
		port := freePort()
		config := proxySpec{
			Port: port,
			Filters: `[` + httpFilter("oauth", oauth2Type, `{config: {token_endpoint: {cluster: idp, uri: "http://idp/token", timeout: 1s},
				authorization_endpoint: "https://idp.example/authorize", redirect_uri: "https://%REQ(:authority)%/callback",
				redirect_path_matcher: {path: {exact: /callback}}, signout_path: {path: {exact: /signout}},
				credentials: {client_id: app, token_secret: {name: token},
					hmac_secret: {name: hmac, sds_config: {ads: {}, resource_api_version: V3}}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "idp", Port: freePort()}, {Name: "xds", Port: m.port, Extra: h2cOptions()}},
			Top: `{node: {id: ` + adsNodeID + `, cluster: e2e}, dynamic_resources: {ads_config: ` + grpcSource("GRPC", "") + `},
				static_resources: {secrets: [{name: token, generic_secret: {secret: {inline_string: s}}}]}}`,
		}.YAML()
		dir := newDir()
		s := Launch(dir, "bootstrap.json", config)
		s.WaitForAdmin()
		Consistently(func() int { return s.Get("/ready").Status }, time.Second).Should(Equal(503))
		Expect(s.Get("/init_dump").Body).To(ContainSubstring("SdsApi hmac"))

		m.set(sdsSnapshot("v1", []*tlsv3.Secret{{Name: "hmac", Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
			Secret: inline([]byte("ads-key"))}}}}, nil, nil))
		waitLive(s)
		client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		r := httpDo(client, "GET", listenerURL(port, "/app"), nil, nil)
		Expect(r.Status).To(Equal(302), r.Body)
		Expect(r.Header.Get("Location")).To(HavePrefix("https://idp.example/authorize?client_id=app"))
		Expect(statValue(s, "sds.hmac.update_success")).To(Equal("1"))
	})

	It("refuses what it does not implement, and secrets it cannot find, with their paths", func() {
		cfg := func(extra, tokenSecret string) string {
			return proxySpec{
				Port: freePort(),
				Filters: `[` + httpFilter("oauth", oauth2Type, `{config: {token_endpoint: {cluster: idp, uri: "http://idp/token", timeout: 1s},
					authorization_endpoint: "https://idp.example/authorize", redirect_uri: "https://%REQ(:authority)%/callback",
					redirect_path_matcher: {path: {exact: /callback}}, signout_path: {path: {exact: /signout}},
					credentials: {client_id: app, token_secret: {name: `+tokenSecret+`}, hmac_secret: {name: hmac}}`+extra+`}}`) + `]`,
				Clusters: []proxyCluster{{Name: "idp", Port: freePort()}},
				Top:      `{static_resources: {secrets: [{name: token, generic_secret: {secret: {inline_string: s}}}, {name: hmac, generic_secret: {secret: {inline_string: h}}}]}}`,
			}.YAML()
		}
		r, _ := validate("ok.yaml", cfg("", "token"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
		for extra, want := range map[string]string{
			`, retry_policy: {retry_on: 5xx}`:                                   "config.retry_policy.retry_on: not supported by Outrigger for the token endpoint",
			`, auth_type: PRIVATE_KEY_JWT`:                                      "config.credentials.token_secret: failed to parse the private key PEM for JWT signing",
			`, token_cookie_chunking: {max_cookie_size: 100}`:                   "max_cookie_size",
			`, forward_id_token: {header: ":path"}`:                             "forward_id_token.header",
			`, forward_bearer_token: true, preserve_authorization_header: true`: "preserve_authorization_header: invalid combination of forward_bearer_token and preserve_authorization_header",
			`, end_session_endpoint: "https://idp.example/logout"`:              "end session endpoint is only supported for OpenID Connect",
		} {
			r, _ = validate("bad.yaml", cfg(extra, "token"))
			Expect(r.ExitCode).To(Equal(1), extra)
			Expect(r.Stderr).To(ContainSubstring(want), extra)
		}
		r, _ = validate("bad.yaml", cfg("", "nope"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("config.credentials.token_secret.name: Unknown static secret: nope"))
	})

	It("signs its token requests with a private key (PRIVATE_KEY_JWT), retries a busy token endpoint, forwards the ID token and chunks a large access token's cookie", func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalECPrivateKey(key)
		Expect(err).NotTo(HaveOccurred())
		keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
		idp := newOAuthProvider()
		idp.assertionKey, idp.assertionAud = &key.PublicKey, "http://idp.example/token"
		idp.accessPad = 6000
		idpPort := portNum(httpTestUpstream(idp, false))
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "id=%q auth=%d", r.Header.Values("X-Id-Token"), len(r.Header.Get("Authorization")))
		}), false))
		port := freePort()
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		keyJSON, err := json.Marshal(keyPEM)
		Expect(err).NotTo(HaveOccurred())
		config := proxySpec{
			Port: port,
			HCM:  `{stat_prefix: edge}`,
			Filters: `[` + httpFilter("oauth", oauth2Type, `{config: {token_endpoint: {cluster: idp, uri: "http://idp.example/token", timeout: 5s},
				authorization_endpoint: "`+fmt.Sprintf("http://127.0.0.1:%d/authorize", idpPort)+`",
				redirect_uri: "http://%REQ(:authority)%/callback",
				redirect_path_matcher: {path: {exact: /callback}}, signout_path: {path: {exact: /signout}},
				credentials: {client_id: app, token_secret: {name: key}, hmac_secret: {name: hmac}},
				auth_type: PRIVATE_KEY_JWT, private_key_jwt_config: {signing_algorithm: ES256},
				retry_policy: {num_retries: 2, retry_back_off: {base_interval: 0.01s, max_interval: 2s}},
				forward_bearer_token: true, forward_id_token: {header: x-id-token},
				token_cookie_chunking: {}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}, {Name: "idp", Port: idpPort}},
			Top: `{static_resources: {secrets: [
				{name: key, generic_secret: {secret: {inline_string: ` + string(keyJSON) + `}}},
				{name: hmac, generic_secret: {secret: {inline_string: "a-long-hmac-key"}}}]}}`,
		}.YAML()
		Start(newDir(), config)

		By("the login's code exchange is tried again past two 503s and authenticates with a verified client assertion")
		idp.busy.Store(2)
		jar := newLoopbackJar()
		// The browser that logs in sees every answer, to check the
		// cookies' sizes.
		var setCookies []string
		browser := &http.Client{Timeout: 10 * time.Second, Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
			setCookies = append(setCookies, req.Response.Header.Values("Set-Cookie")...)
			return nil
		}}
		r := httpDo(browser, "GET", base+"/app", nil, http.Header{"X-Id-Token": {"forged"}})
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(idp.busy.Load()).To(BeZero())
		idp.mu.Lock()
		tries := len(idp.tokenForms)
		idp.mu.Unlock()
		Expect(tries).To(Equal(3))
		form, _ := idp.lastToken()
		Expect(form.Has("client_secret")).To(BeFalse())
		Expect(form.Get("client_assertion")).NotTo(BeEmpty())

		By("the upstream gets the ID token in x-id-token (not the client's) and the 6000-byte access token")
		Expect(r.Body).To(Equal(fmt.Sprintf(`id=["id-1"] auth=%d`, len("Bearer at-1")+6000)))

		By("the access token's cookie came in chunks of at most 4096 bytes, which the next request joins")
		Expect(jar.cookieNames(base)).To(ContainElements("BearerToken_0", "BearerToken_1", "BearerToken_chunks", "IdToken", "OauthHMAC"))
		Expect(jar.cookieNames(base)).NotTo(ContainElement("BearerToken"))
		Expect(setCookies).NotTo(BeEmpty())
		for _, c := range setCookies {
			Expect(len(c)).To(BeNumerically("<=", 4096), c[:40])
		}
		r = httpDo(browser, "GET", base+"/again", nil, http.Header{"X-Id-Token": {"forged"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(fmt.Sprintf(`id=["id-1"] auth=%d`, len("Bearer at-1")+6000)))
		idp.mu.Lock()
		Expect(idp.tokenForms).To(HaveLen(3))
		idp.mu.Unlock()

		By("a token endpoint busy beyond the retries ends the login with 401")
		idp.busy.Store(3)
		r = httpDo(&http.Client{Timeout: 10 * time.Second, Jar: newLoopbackJar()}, "GET", base+"/app", nil, nil)
		Expect(r.Status).To(Equal(401))
		Expect(idp.busy.Load()).To(BeZero())
	})
})
