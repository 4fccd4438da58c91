package oauth2

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

func TestForwardIDToken(t *testing.T) {
	h := newHarness(t, nil)
	cfg := baseConfig()
	cfg.DisableTokenEncryption = true
	cfg.ForwardBearerToken = true
	cfg.ForwardIdToken = &oauth2v3.OAuth2TokenForwarding{Header: "X-Id-Token"}
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/app", "cookie", sessionCookies("host", 1700000060, "at", "id", "rt"), "x-id-token", "forged")
	if run(fc, s); s.Reply != nil {
		t.Fatalf("a valid session: %+v", s.Reply)
	}
	if v := s.ReqHeaders.Values("x-id-token"); len(v) != 1 || v[0] != "id" {
		t.Fatalf("x-id-token = %q", v)
	}
	if v, _ := s.ReqHeaders.Get("authorization"); v != "Bearer at" {
		t.Fatalf("authorization = %q", v)
	}
	// Without a session the client's own header does not go through,
	// even when the request is let through unauthenticated.
	cfg.AllowFailedMatcher = append(cfg.AllowFailedMatcher, headerExact("x-allow", "1"))
	fc = h.compile(cfg)
	s = httpfiltertest.NewStream("GET", "/app", "x-id-token", "forged", "x-allow", "1")
	if run(fc, s); s.Reply != nil {
		t.Fatalf("allow failed: %+v", s.Reply)
	}
	if v, ok := s.ReqHeaders.Get("x-id-token"); ok {
		t.Fatalf("a client's x-id-token went upstream: %q", v)
	}

	// In Authorization, as a Bearer credential.
	cfg = baseConfig()
	cfg.DisableTokenEncryption = true
	cfg.ForwardIdToken = &oauth2v3.OAuth2TokenForwarding{Header: "authorization"}
	fc = h.compile(cfg)
	s = httpfiltertest.NewStream("GET", "/app", "cookie", sessionCookies("host", 1700000060, "at", "id", "rt"), "authorization", "Bearer forged")
	if run(fc, s); s.Reply != nil {
		t.Fatalf("a valid session: %+v", s.Reply)
	}
	if v := s.ReqHeaders.Values("authorization"); len(v) != 1 || v[0] != "Bearer id" {
		t.Fatalf("authorization = %q", v)
	}
}

func TestForwardIDTokenAfterRefresh(t *testing.T) {
	ts := &tokenServer{status: 200, answer: `{"access_token":"at2","id_token":"id2","refresh_token":"rt2","expires_in":60}`}
	h := newHarness(t, ts)
	cfg := baseConfig()
	cfg.DisableTokenEncryption = true
	cfg.ForwardIdToken = &oauth2v3.OAuth2TokenForwarding{Header: "x-id"}
	fc := h.compile(cfg)
	s := httpfiltertest.NewStream("GET", "/app", "cookie", "RefreshToken=rt")
	if run(fc, s); s.Reply != nil {
		t.Fatalf("refresh: %+v", s.Reply)
	}
	if v, _ := s.ReqHeaders.Get("x-id"); v != "id2" {
		t.Fatalf("x-id = %q", v)
	}
}

// flakyServer fails its first fails token requests with 503, then
// answers with a session.
type flakyServer struct {
	fails, calls atomic.Int32
}

func (f *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.calls.Add(1) <= f.fails.Load() {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte(`{"access_token":"at","expires_in":60}`))
}

func TestRetryPolicy(t *testing.T) {
	fs := &flakyServer{}
	fs.fails.Store(2)
	h := newHarness(t, fs)
	cfg := baseConfig()
	cfg.RetryPolicy = &corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(2),
		RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(time.Millisecond), MaxInterval: durationpb.New(2 * time.Second)}}
	fc := h.compile(cfg)
	s := startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 302 || s.Reply.Details != detailsLoggedIn {
		t.Fatalf("two 503s then a session, with two retries: %+v", s.Reply)
	}
	if fs.calls.Load() != 3 {
		t.Fatalf("tries = %d, want 3", fs.calls.Load())
	}

	// One retry is not enough: the last 503 is the exchange's answer.
	fs.calls.Store(0)
	cfg.RetryPolicy.NumRetries = wrapperspb.UInt32(1)
	fc = h.compile(cfg)
	s = startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 401 || !strings.HasPrefix(s.Reply.Details, "Failed_to_get_access_token:_response_code:_503") {
		t.Fatalf("one retry: %+v", s.Reply)
	}
	if fs.calls.Load() != 2 {
		t.Fatalf("tries = %d, want 2", fs.calls.Load())
	}

	// Without a policy, no retry.
	fs.calls.Store(0)
	cfg.RetryPolicy = nil
	fc = h.compile(cfg)
	s = startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 401 || fs.calls.Load() != 1 {
		t.Fatalf("no policy: %+v, %d tries", s.Reply, fs.calls.Load())
	}

	// A 4xx is an answer, not retried.
	fs.calls.Store(0)
	fs.fails.Store(0)
	bad := &tokenServer{status: 400, answer: `{"error":"invalid_grant"}`}
	h2 := newHarness(t, bad)
	cfg.RetryPolicy = &corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(3)}
	fc = h2.compile(cfg)
	s = startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 401 || len(bad.forms) != 1 {
		t.Fatalf("a 400: %+v, %d tries", s.Reply, len(bad.forms))
	}
}

func pemKey(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func TestPrivateKeyJWT(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ts := &tokenServer{status: 200, answer: `{"access_token":"at","expires_in":60}`}
	h := newHarness(t, ts)
	for _, tc := range []struct {
		name   string
		secret *tlsv3.Secret
		jwtCfg *oauth2v3.PrivateKeyJwtConfig
		pub    any
		alg    string
		kid    string
		aud    string
		life   int64
	}{
		{"rsa default", &tlsv3.Secret{Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
			Secret: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: pemKey(t, rsaKey)}}}}},
			nil, &rsaKey.PublicKey, "RS256", "", "https://idp.example/token", 60},
		{"ec with kid", &tlsv3.Secret{Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{Secrets: map[string]*corev3.DataSource{
			"private_key": {Specifier: &corev3.DataSource_InlineString{InlineString: pemKey(t, ecKey)}},
			"key_id":      {Specifier: &corev3.DataSource_InlineString{InlineString: "k1"}}}}}},
			&oauth2v3.PrivateKeyJwtConfig{SigningAlgorithm: oauth2v3.PrivateKeyJwtConfig_ES384, AssertionLifetime: durationpb.New(90 * time.Second), AssertionAudience: "https://issuer.example"},
			&ecKey.PublicKey, "ES384", "k1", "https://issuer.example", 90},
	} {
		h.svc.secrets["jwtkey"] = tlsconfig.NewProvider("jwtkey", tc.secret)
		cfg := baseConfig()
		cfg.AuthType = oauth2v3.OAuth2Config_PRIVATE_KEY_JWT
		cfg.PrivateKeyJwtConfig = tc.jwtCfg
		cfg.Credentials.TokenSecret = &tlsv3.SdsSecretConfig{Name: "jwtkey"}
		fc := h.compile(cfg)
		s := startFlow(t, fc)
		if run(fc, s); s.Reply.Status != 302 || s.Reply.Details != detailsLoggedIn {
			t.Fatalf("%s: callback: %+v", tc.name, s.Reply)
		}
		form := ts.forms[len(ts.forms)-1]
		if form.Get("client_id") != "app" || form.Has("client_secret") || form.Get("client_assertion_type") != clientAssertionType {
			t.Fatalf("%s: token request = %v", tc.name, form)
		}
		sig, err := jose.ParseSignedCompact(form.Get("client_assertion"), []jose.SignatureAlgorithm{jose.SignatureAlgorithm(tc.alg)})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		payload, err := sig.Verify(tc.pub)
		if err != nil {
			t.Fatalf("%s: the assertion does not verify: %v", tc.name, err)
		}
		hdr := sig.Signatures[0].Header
		if hdr.KeyID != tc.kid || hdr.ExtraHeaders["typ"] != "JWT" {
			t.Fatalf("%s: header = %+v", tc.name, hdr)
		}
		var claims map[string]any
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		now := h.now.Unix()
		if claims["iss"] != "app" || claims["sub"] != "app" || claims["aud"] != tc.aud ||
			claims["iat"] != float64(now) || claims["exp"] != float64(now+tc.life) || len(claims["jti"].(string)) != 36 {
			t.Fatalf("%s: claims = %v", tc.name, claims)
		}
	}

	// A key of the wrong family is refused when known.
	cfg := baseConfig()
	cfg.AuthType = oauth2v3.OAuth2Config_PRIVATE_KEY_JWT
	cfg.PrivateKeyJwtConfig = &oauth2v3.PrivateKeyJwtConfig{SigningAlgorithm: oauth2v3.PrivateKeyJwtConfig_ES256}
	cfg.Credentials.TokenSecret = &tlsv3.SdsSecretConfig{Name: "rsa"}
	h.svc.secrets["rsa"] = genericSecret("rsa", pemKey(t, rsaKey))
	_, err = Factory{}.Compile(&oauth2v3.OAuth2{Config: cfg}, httpfilter.Context{Name: "oauth", Stats: h.store, Services: h.svc})
	if err == nil || !strings.Contains(err.Error(), "config.credentials.token_secret: an RSA key cannot sign ES256") {
		t.Fatalf("err = %v", err)
	}
}

func TestChunkSplitAndJoin(t *testing.T) {
	ch, err := compileChunking(&oauth2v3.TokenCookieChunking{MaxCookieSize: wrapperspb.UInt32(600), MaxChunks: wrapperspb.UInt32(4)})
	if err != nil {
		t.Fatal(err)
	}
	settings := cookieSettings{path: "/"}
	small := ch.split("BearerToken", "abc", "60", "", settings)
	if len(small) != 1 || small[0] != setCookie("BearerToken", "abc", "60", "", settings) {
		t.Fatalf("a small token: %q", small)
	}
	value := strings.Repeat("0123456789", 150)
	parts := ch.split("BearerToken", value, "60", "example.com", settings)
	if len(parts) != 4 {
		t.Fatalf("%d cookies: %q", len(parts), parts)
	}
	var jar cookieJar
	for i, p := range parts {
		if len(p) > 600 {
			t.Fatalf("cookie %d is %d bytes", i, len(p))
		}
		pairs := parseCookies(strings.Split(p, ";")[0])
		jar = append(jar, pairs...)
	}
	if jar[3] != (cookie{"BearerToken_chunks", "3"}) || jar[0].name != "BearerToken_0" {
		t.Fatalf("chunks = %v", jar)
	}
	jar = append(cookieJar{{"Other", "x"}}, jar...)
	out, seen, joined := joinChunks(jar, []string{"BearerToken", "IdToken"})
	if !joined || out.get("BearerToken") != value || len(out) != 2 || len(seen["BearerToken"]) != 4 {
		t.Fatalf("joined = %v %v %v", joined, out, seen)
	}
	// Too large for max_chunks: written whole.
	if whole := ch.split("BearerToken", strings.Repeat("x", 3000), "60", "", settings); len(whole) != 1 {
		t.Fatalf("too large: %d cookies", len(whole))
	}
	// An incomplete set is dropped, the whole cookie (if any) read.
	out, _, joined = joinChunks(cookieJar{{"BearerToken_chunks", "2"}, {"BearerToken_0", "a"}, {"BearerToken", "w"}}, []string{"BearerToken"})
	if joined || out.get("BearerToken") != "w" || len(out) != 1 {
		t.Fatalf("incomplete: %v %v", joined, out)
	}
}

func TestChunkedSessionRoundTrip(t *testing.T) {
	big := strings.Repeat("a", 5000)
	ts := &tokenServer{status: 200, answer: `{"access_token":"` + big + `","id_token":"id","expires_in":60}`}
	h := newHarness(t, ts)
	cfg := baseConfig()
	cfg.ForwardBearerToken = true
	cfg.TokenCookieChunking = &oauth2v3.TokenCookieChunking{}
	fc := h.compile(cfg)
	s := startFlow(t, fc)
	if run(fc, s); s.Reply.Status != 302 || s.Reply.Details != detailsLoggedIn {
		t.Fatalf("callback: %+v", s.Reply)
	}
	var cookies []string
	for _, c := range setCookies(s) {
		if len(c) > 4096 {
			t.Fatalf("a %d-byte cookie: %.60s", len(c), c)
		}
		// The session's cookies, not the flow's deletions.
		if pair := strings.Split(c, ";")[0]; !strings.HasSuffix(pair, "=deleted") {
			cookies = append(cookies, pair)
		}
	}
	joined := strings.Join(cookies, "; ")
	if !strings.Contains(joined, "BearerToken_chunks=") || strings.Contains(joined, "BearerToken=") {
		t.Fatalf("cookies = %.300s", joined)
	}
	s = httpfiltertest.NewStream("GET", "/app", "cookie", joined)
	if run(fc, s); s.Reply != nil {
		t.Fatalf("the chunked session: %+v", s.Reply)
	}
	if v, _ := s.ReqHeaders.Get("authorization"); v != "Bearer "+big {
		t.Fatalf("authorization = %.40s...", v)
	}
	if v, _ := s.ReqHeaders.Get("cookie"); strings.Contains(v, "BearerToken_") || !strings.Contains(v, "BearerToken="+big) {
		t.Fatalf("cookies upstream = %.100s", v)
	}
	// Sign-out deletes the chunks too.
	s = httpfiltertest.NewStream("GET", "/signout", "cookie", joined)
	run(fc, s)
	got := strings.Join(setCookies(s), "\n")
	for _, n := range []string{"BearerToken_0=deleted", "BearerToken_1=deleted", "BearerToken_chunks=deleted"} {
		if !strings.Contains(got, n) {
			t.Errorf("sign-out lacks %s:\n%s", n, got)
		}
	}
}
