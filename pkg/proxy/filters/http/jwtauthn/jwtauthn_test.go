package jwtauthn

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// oneProvider is a filter with provider "p" (issuer "iss", the signers'
// JWKS, extra provider fields) required on every path.
func oneProvider(t testing.TB, extra string, now *time.Time, signers ...*signer) *compiled {
	t.Helper()
	return compile(t, `{"providers":{"p":`+providerJSON("iss", jwks(t, signers...), extra)+`},
		"rules":[{"match":{"prefix":"/"},"requires":{"provider_name":"p"}}]}`, now)
}

func claims(extra map[string]any) map[string]any {
	c := map[string]any{"iss": "iss", "sub": "alice", "exp": testNow.Unix() + 600}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// TestAlgorithms signs a token with a key of each algorithm generated here
// and verifies it with the JWKS of its public half; a token whose
// signature is altered fails, and one whose kid no key has finds no key.
func TestAlgorithms(t *testing.T) {
	for _, alg := range []jose.SignatureAlgorithm{
		jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
		jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512,
	} {
		t.Run(string(alg), func(t *testing.T) {
			s := newSigner(t, alg, "k1")
			c := oneProvider(t, "", nil, s)
			tok := s.sign(t, claims(nil))
			if ok, _ := c.run(get("/", "authorization", "Bearer "+tok)); !ok {
				t.Fatal("a good token was refused")
			}
			// Another signature of the same length.
			h, p, _ := strings.Cut(tok, ".")
			p, _, _ = strings.Cut(p, ".")
			other := s.sign(t, claims(map[string]any{"sub": "mallory"}))
			bad := h + "." + p + "." + other[strings.LastIndex(other, ".")+1:]
			st := get("/", "authorization", "Bearer "+bad)
			if ok, www := c.run(st); ok || st.Reply.Body != "Jwt verification fails" || www != `Bearer realm="http://host/", error="invalid_token"` {
				t.Fatalf("altered token: passed %v, reply %+v, www-authenticate %q", ok, st.Reply, www)
			}
			stranger := newSigner(t, alg, "k2")
			st = get("/", "authorization", "Bearer "+stranger.sign(t, claims(nil)))
			if ok, _ := c.run(st); ok || st.Reply.Body != "Jwks doesn't have key to match kid or alg from Jwt" {
				t.Fatalf("unknown kid: passed %v, reply %+v", ok, st.Reply)
			}
		})
	}
}

// TestFailureReply checks the reply to a missing token: 401, Envoy's body,
// a challenge without error, the details and the stats.
func TestFailureReply(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := oneProvider(t, "", nil, s)
	st := get("/a/b?c=d")
	ok, www := c.run(st)
	if ok || st.Reply.Status != 401 || st.Reply.Body != "Jwt is missing" || st.Reply.Details != "jwt_authn_access_denied{Jwt_is_missing}" {
		t.Fatalf("passed %v, reply %+v", ok, st.Reply)
	}
	if www != `Bearer realm="http://host/a/b?c=d"` {
		t.Fatalf("www-authenticate %q", www)
	}
	for name, want := range map[string]uint64{"denied": 1, "allowed": 0} {
		if got := c.counter(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	for _, tc := range []struct{ token, body string }{
		{"abc", "Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections"},
		{"a..c", "Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections"},
		{"a.e30.c2ln", "Jwt header is an invalid Base64url encoded"},
		{b64("x") + ".e30.c2ln", "Jwt header is an invalid JSON"},
		{b64(`{"alg":"none"}`) + ".e30.c2ln", "Jwt header [alg] is not supported"},
		{b64(`{"alg":3}`) + ".e30.c2ln", "Jwt header [alg] field is required and must be a string"},
		{b64(`{}`) + ".e30.c2ln", "Jwt header [alg] field is required and must be a string"},
		{b64(`{"alg":"ES256","kid":1}`) + ".e30.c2ln", "Jwt header [kid] field is not a string"},
		{b64(`{"alg":"ES256"}`) + ".e.c2ln", "Jwt payload is an invalid Base64url encoded"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`[1]`) + ".c2ln", "Jwt payload is an invalid JSON"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"iss":1}`) + ".c2ln", "Jwt payload [iss] field is not a string"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"sub":true}`) + ".c2ln", "Jwt payload [sub] field is not a string"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"iat":"x"}`) + ".c2ln", "Jwt payload [iat] field is not an integer"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"nbf":-1}`) + ".c2ln", "Jwt payload [nbf] field is not a positive 64 bit integer"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"exp":1e30}`) + ".c2ln", "Jwt payload [exp] field is not a positive 64 bit integer"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"jti":2}`) + ".c2ln", "Jwt payload [jti] field is not a string"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"aud":[1]}`) + ".c2ln", "Jwt payload [aud] field is not a string or string list"},
		{b64(`{"alg":"ES256"}`) + ".e30.c", "Jwt signature is an invalid Base64url encoded"},
		{b64(`{"alg":"ES256"}`) + "." + b64(`{"iss":"other"}`) + ".c2ln", "Jwt issuer is not configured"},
	} {
		st := get("/", "authorization", "Bearer "+tc.token)
		if ok, _ := c.run(st); ok || st.Reply.Body != tc.body || st.Reply.Status != 401 {
			t.Errorf("token %q: passed %v, reply %+v, want %q", tc.token, ok, st.Reply, tc.body)
		}
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestTimeWithSkew checks exp and nbf with the default skew of 60 s and a
// configured one.
func TestTimeWithSkew(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	now := testNow
	c := oneProvider(t, "", &now, s)
	cs := oneProvider(t, `,"clock_skew_seconds":5`, &now, s)
	n := testNow.Unix()
	for _, tc := range []struct {
		c       *compiled
		claims  map[string]any
		failure string
	}{
		{c, map[string]any{"exp": n - 30}, ""},
		{c, map[string]any{"exp": n - 61}, "Jwt is expired"},
		{cs, map[string]any{"exp": n - 30}, "Jwt is expired"},
		{cs, map[string]any{"exp": n - 4}, ""},
		{c, map[string]any{"nbf": n + 30}, ""},
		{c, map[string]any{"nbf": n + 61}, "Jwt not yet valid"},
		{cs, map[string]any{"nbf": n + 30}, "Jwt not yet valid"},
	} {
		st := get("/", "authorization", "Bearer "+s.sign(t, claims(tc.claims)))
		ok, _ := tc.c.run(st)
		if tc.failure == "" && !ok {
			t.Errorf("%v: refused with %+v", tc.claims, st.Reply)
		}
		if tc.failure != "" && (ok || st.Reply.Body != tc.failure) {
			t.Errorf("%v: passed %v reply %+v, want %q", tc.claims, ok, st.Reply, tc.failure)
		}
	}
}

// TestAudiences checks the provider's audiences (403 when none is the
// token's; scheme and trailing slash ignored) and provider_and_audiences.
func TestAudiences(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := compile(t, `{"providers":{"p":`+providerJSON("iss", jwks(t, s), `,"audiences":["https://api.example.com/","b"]`)+`},
		"rules":[{"match":{"prefix":"/other"},"requires":{"provider_and_audiences":{"provider_name":"p","audiences":["other"]}}},
		{"match":{"prefix":"/"},"requires":{"provider_name":"p"}}]}`, nil)
	for _, tc := range []struct {
		path string
		aud  any
		ok   bool
	}{
		{"/", "api.example.com", true},
		{"/", []any{"x", "http://b"}, true},
		{"/", "c", false},
		{"/", nil, false},
		{"/other", "other", true},
		{"/other", "b", false},
	} {
		cl := claims(nil)
		if tc.aud != nil {
			cl["aud"] = tc.aud
		}
		st := get(tc.path, "authorization", "Bearer "+s.sign(t, cl))
		ok, www := c.run(st)
		if ok != tc.ok {
			t.Errorf("%s aud %v: passed %v, reply %+v", tc.path, tc.aud, ok, st.Reply)
		}
		if !ok && (st.Reply.Status != 403 || st.Reply.Body != "Audiences in Jwt are not allowed" || !strings.Contains(www, `error="invalid_token"`)) {
			t.Errorf("%s aud %v: reply %+v www %q", tc.path, tc.aud, st.Reply, www)
		}
	}
}

// TestExtraction checks where tokens are found: the default Authorization
// Bearer and access_token parameter, configured headers with prefixes,
// parameters and cookies; a token not forwarded leaves its header.
func TestExtraction(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	tok := s.sign(t, claims(nil))
	def := oneProvider(t, "", nil, s)
	conf := oneProvider(t, `,"forward":true,"from_headers":[{"name":"x-token","value_prefix":"Tok "}],"from_params":["jwt"],"from_cookies":["session"]`, nil, s)
	cases := []struct {
		name string
		c    *compiled
		path string
		hdrs []string
		ok   bool
	}{
		{"bearer", def, "/", []string{"authorization", "Bearer " + tok}, true},
		{"bearer with more", def, "/", []string{"authorization", "Bearer " + tok + ", other"}, true},
		{"basic", def, "/", []string{"authorization", "Basic " + tok}, false},
		{"second authorization", def, "/", []string{"authorization", "Basic x", "authorization", "Bearer " + tok}, true},
		{"access_token", def, "/?access_token=" + tok, nil, true},
		{"default ignores x-token", def, "/", []string{"x-token", "Tok " + tok}, false},
		{"x-token", conf, "/", []string{"x-token", "a Tok " + tok}, true},
		{"x-token without prefix", conf, "/", []string{"x-token", tok}, false},
		{"param", conf, "/p?a=1&jwt=" + tok, nil, true},
		{"cookie", conf, "/", []string{"cookie", "a=b; session=" + tok}, true},
		{"configured ignores bearer", conf, "/", []string{"authorization", "Bearer " + tok}, false},
	}
	for _, tc := range cases {
		st := get(tc.path, tc.hdrs...)
		ok, _ := tc.c.run(st)
		if ok != tc.ok {
			t.Errorf("%s: passed %v, reply %+v", tc.name, ok, st.Reply)
		}
	}
	st := get("/", "authorization", "Bearer "+tok)
	if ok, _ := def.run(st); !ok {
		t.Fatal("refused")
	}
	if _, has := st.ReqHeaders.Get("authorization"); has {
		t.Error("the token's header stayed without forward")
	}
	st = get("/", "x-token", "Tok "+tok)
	if ok, _ := conf.run(st); !ok {
		t.Fatal("refused")
	}
	if v, _ := st.ReqHeaders.Get("x-token"); v != "Tok "+tok {
		t.Errorf("forward: x-token is %q", v)
	}
}

// TestForwardedClaims checks forward_payload_header (padded or not),
// claim_to_headers and the dynamic metadata of payload and header.
func TestForwardedClaims(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := oneProvider(t, `,"forward_payload_header":"x-payload","pad_forward_payload_header":true,
		"claim_to_headers":[{"header_name":"x-sub","claim_name":"sub"},{"header_name":"x-n","claim_name":"n"},{"header_name":"x-deep","claim_name":"a.b"},{"header_name":"x-admin","claim_name":"admin"},{"header_name":"x-list","claim_name":"list"},{"header_name":"x-obj","claim_name":"a"}],
		"payload_in_metadata":"pl","header_in_metadata":"hd","clear_route_cache":true,
		"normalize_payload_in_metadata":{"space_delimited_claims":["scope","n"]}`, nil, s)
	tok := s.sign(t, claims(map[string]any{"n": 42, "a": map[string]any{"b": "deep"}, "admin": true, "list": []any{"x"}, "pad": "x", "scope": " read  write"}))
	st := get("/", "authorization", "Bearer "+tok)
	if ok, _ := c.run(st); !ok {
		t.Fatalf("refused: %+v", st.Reply)
	}
	payload := strings.Split(tok, ".")[1]
	want := map[string]string{"x-payload": padBase64(payload), "x-sub": "alice", "x-n": "42", "x-deep": "deep", "x-admin": "true"}
	for h, v := range want {
		if got, _ := st.ReqHeaders.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	// Lists and objects go as the base64 of their JSON, as in Envoy.
	if v, _ := st.ReqHeaders.Get("x-list"); v != base64.StdEncoding.EncodeToString([]byte(`["x"]`)) {
		t.Errorf("x-list = %q", v)
	}
	if v, _ := st.ReqHeaders.Get("x-obj"); v != base64.StdEncoding.EncodeToString([]byte(`{"b":"deep"}`)) {
		t.Errorf("x-obj = %q", v)
	}
	if len(payload)%4 != 0 && !strings.HasSuffix(want["x-payload"], "=") {
		t.Error("the payload was not padded")
	}
	if st.RouteCleared != 1 {
		t.Errorf("route cache cleared %d times", st.RouteCleared)
	}
	md := st.Metadata.GetFilterMetadata()[metadataNamespace]
	if md.GetFields()["pl"].GetStructValue().GetFields()["sub"].GetStringValue() != "alice" ||
		md.GetFields()["hd"].GetStructValue().GetFields()["alg"].GetStringValue() != "ES256" {
		t.Errorf("metadata %v", md)
	}
	pl := md.GetFields()["pl"].GetStructValue().GetFields()
	if scope := pl["scope"].GetListValue().GetValues(); len(scope) != 2 || scope[0].GetStringValue() != "read" || scope[1].GetStringValue() != "write" {
		t.Errorf("normalized scope %v", pl["scope"])
	}
	if pl["n"].GetNumberValue() != 42 {
		t.Errorf("a number claim was normalized: %v", pl["n"])
	}
}

// TestRequirements checks requires_any, requires_all, allow_missing,
// allow_missing_or_failed, requirement_map by rule name and per route,
// disabled routes and an unknown requirement name.
func TestRequirements(t *testing.T) {
	a, b := newSigner(t, jose.ES256, "a"), newSigner(t, jose.RS256, "b")
	c := compile(t, `{"providers":{
		"a":`+providerJSON("iss-a", jwks(t, a), "")+`,
		"b":`+providerJSON("iss-b", jwks(t, b), `,"from_headers":[{"name":"x-b"}]`)+`},
		"requirement_map":{"both":{"requires_all":{"requirements":[{"provider_name":"a"},{"provider_name":"b"}]}},
			"either":{"requires_any":{"requirements":[{"provider_name":"a"},{"provider_name":"b"}]}}},
		"rules":[
		{"match":{"prefix":"/any"},"requirement_name":"either"},
		{"match":{"prefix":"/all"},"requirement_name":"both"},
		{"match":{"prefix":"/missing"},"requires":{"allow_missing":{}}},
		{"match":{"prefix":"/failed"},"requires":{"allow_missing_or_failed":{}}},
		{"match":{"prefix":"/open"}},
		{"match":{"prefix":"/"},"requires":{"provider_name":"a"}}]}`, nil)
	ta := a.sign(t, map[string]any{"iss": "iss-a"})
	tb := b.sign(t, map[string]any{"iss": "iss-b"})
	expired := a.sign(t, map[string]any{"iss": "iss-a", "exp": testNow.Unix() - 3600})
	bearerA, xb := []string{"authorization", "Bearer " + ta}, []string{"x-b", tb}
	both := append(append([]string{}, bearerA...), xb...)
	cases := []struct {
		path string
		hdrs []string
		body string // "" when the request passes
	}{
		{"/any", bearerA, ""},
		{"/any", xb, ""},
		{"/any", nil, "Jwt is missing"},
		{"/any", []string{"authorization", "Bearer " + expired}, "Jwt is expired"},
		{"/all", both, ""},
		{"/all", bearerA, "Jwt is missing"},
		{"/missing", nil, ""},
		{"/missing", bearerA, ""},
		{"/missing", xb, ""},
		{"/missing", []string{"authorization", "Bearer " + expired}, "Jwt is expired"},
		{"/missing", []string{"authorization", "Bearer " + tb}, "Jwt issuer is not configured"},
		{"/failed", []string{"authorization", "Bearer " + expired}, ""},
		{"/failed", nil, ""},
		{"/open", nil, ""},
		{"/x", xb, "Jwt is missing"},
		{"/x", bearerA, ""},
	}
	for _, tc := range cases {
		st := get(tc.path, tc.hdrs...)
		ok, _ := c.run(st)
		if tc.body == "" && !ok {
			t.Errorf("%s %v: refused %+v", tc.path, tc.hdrs, st.Reply)
		}
		if tc.body != "" && (ok || st.Reply.Body != tc.body) {
			t.Errorf("%s %v: passed %v, reply %+v, want %q", tc.path, tc.hdrs, ok, st.Reply, tc.body)
		}
	}

	// Per route: a requirement by name, disabled, an unknown name.
	for _, tc := range []struct {
		rc   *routeConfig
		hdrs []string
		ok   bool
	}{
		{&routeConfig{name: "both"}, bearerA, false},
		{&routeConfig{name: "both"}, both, true},
		{&routeConfig{disabled: true}, nil, true},
	} {
		st := get("/x", tc.hdrs...)
		st.PerRoute = map[string][]any{"jwt": {tc.rc}}
		if ok, _ := c.run(st); ok != tc.ok {
			t.Errorf("route %+v: passed %v, reply %+v", tc.rc, ok, st.Reply)
		}
	}
	st := get("/x", bearerA...)
	st.PerRoute = map[string][]any{"jwt": {&routeConfig{name: "nope"}}}
	if ok, _ := c.run(st); ok || st.Reply.Status != 403 ||
		st.Reply.Body != "Failed JWT authentication: Wrong requirement_name: nope. It should be one of [both,either]" ||
		st.Reply.Details != "jwt_authn_access_denied{Wrong_requirement_name:_nope._It_should_be_one_of_[both,either]}" {
		t.Errorf("unknown requirement: %+v", st.Reply)
	}
}

// TestCORSAndCache checks bypass_cors_preflight and the JWT cache's
// counters.
func TestCORSAndCache(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := compile(t, `{"bypass_cors_preflight":true,"providers":{"p":`+providerJSON("iss", jwks(t, s), `,"jwt_cache_config":{"jwt_cache_size":2}`)+`},
		"rules":[{"match":{"prefix":"/"},"requires":{"provider_name":"p"}}]}`, nil)
	pre := get("/", "origin", "http://a", "access-control-request-method", "GET")
	pre.Req.Method = "OPTIONS"
	if ok, _ := c.run(pre); !ok || c.counter("cors_preflight_bypassed") != 1 || c.counter("allowed") != 1 {
		t.Fatalf("preflight: passed %v, stats %d %d", ok, c.counter("cors_preflight_bypassed"), c.counter("allowed"))
	}
	tok := s.sign(t, claims(nil))
	for range 3 {
		if ok, _ := c.run(get("/", "authorization", "Bearer "+tok)); !ok {
			t.Fatal("refused")
		}
	}
	if c.counter("jwt_cache_miss") != 1 || c.counter("jwt_cache_hit") != 2 {
		t.Errorf("cache miss %d hit %d", c.counter("jwt_cache_miss"), c.counter("jwt_cache_hit"))
	}
}

// TestConfigErrors checks that bad configurations are refused with the
// field's path.
func TestConfigErrors(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	p := providerJSON("iss", jwks(t, s), "")
	for _, tc := range []struct{ js, want string }{
		{`{"providers":{"p":` + p + `},"rules":[{"match":{"prefix":"/"},"requires":{"provider_name":"q"}}]}`, `rules[0].requires.provider_name: required provider ['q'] is not configured`},
		{`{"providers":{"p":` + p + `},"rules":[{"match":{"prefix":"/"},"requirement_name":"q"}]}`, `rules[0].requirement_name: "q" is not in requirement_map`},
		{`{"providers":{"p":` + p + `},"requirement_map":{"r":{"requires_any":{"requirements":[{"provider_name":"p"},{"provider_name":"z"}]}}}}`, `requirement_map["r"].requires_any.requirements[1].provider_name`},
		{`{"providers":{"p":{"issuer":"i","local_jwks":{"filename":"/nonexistent/jwks"}}}}`, `providers["p"].local_jwks.filename`},
		{`{"providers":{"p":{"issuer":"i","remote_jwks":{"http_uri":{"uri":"http://jwks/keys","cluster":"c","timeout":"1s"}}}}}`, `providers["p"].remote_jwks.http_uri.cluster: no cluster can be reached`},
		{`{"providers":{"p":` + p + `},"filter_state_rules":{"name":"x","requires":{"a":{"provider_name":"q"}}}}`, `filter_state_rules.requires["a"].provider_name: required provider ['q'] is not configured`},

		// Envoy's local_jwks is a JWKS: PEM keys are not JSON.
		{`{"providers":{"p":{"issuer":"i","local_jwks":{"inline_string":"-----BEGIN PUBLIC KEY-----\\nMFkw\\n-----END PUBLIC KEY-----"}}}}`, `providers["p"].local_jwks: Provider 'p' in jwt_authn config has invalid local jwks: Jwks is an invalid JSON`},
		{`{"providers":{"p":{"issuer":"i","local_jwks":{"inline_string":"{}"}}}}`, `providers["p"].local_jwks: Provider 'p' in jwt_authn config has invalid local jwks: Jwks does not have [keys] field`},
		{`{"providers":{"p":{"issuer":"i","local_jwks":{"inline_string":"{\"keys\":{}}"}}}}`, `providers["p"].local_jwks: Provider 'p' in jwt_authn config has invalid local jwks: [keys] in Jwks is not an array`},
		{`{"providers":{"p":{"issuer":"i","local_jwks":{"inline_string":"{\"keys\":[{\"kty\":\"nope\"}]}"}}}}`, `providers["p"].local_jwks: Provider 'p' in jwt_authn config has invalid local jwks: Jwks doesn't have any valid public key`},
	} {
		_, err := compileErr(tc.js, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.js, err, tc.want)
		}
	}
	// An empty local JWKS is accepted, as by Envoy: its requests fail.
	c := compile(t, `{"providers":{"p":{"issuer":"iss","local_jwks":{"inline_string":""}}},
		"rules":[{"match":{"prefix":"/"},"requires":{"provider_name":"p"}}]}`, nil)
	st := get("/", "authorization", "Bearer "+s.sign(t, claims(nil)))
	if ok, _ := c.run(st); ok || st.Reply.Body != "Jwks doesn't have any valid public key" {
		t.Errorf("empty JWKS: passed %v, reply %+v", ok, st.Reply)
	}
}

// TestSubjectsAndLifetime checks subjects (a matcher on sub),
// require_expiration (an exp is needed) and max_lifetime (exp - now under
// it, and an exp needed; it takes precedence over require_expiration).
func TestSubjectsAndLifetime(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	now := testNow
	n := testNow.Unix()
	subjects := oneProvider(t, `,"subjects":{"prefix":"spiffe://example.com/"}`, &now, s)
	require := oneProvider(t, `,"require_expiration":true`, &now, s)
	maxLife := oneProvider(t, `,"require_expiration":true,"max_lifetime":"3600s"`, &now, s)
	noExp := func(extra map[string]any) map[string]any {
		c := claims(extra)
		delete(c, "exp")
		return c
	}
	for _, tc := range []struct {
		name    string
		c       *compiled
		claims  map[string]any
		failure string
	}{
		{"subject allowed", subjects, claims(map[string]any{"sub": "spiffe://example.com/web"}), ""},
		{"subject refused", subjects, claims(nil), "Jwt verification fails"},
		{"no subject", subjects, noExp(map[string]any{"sub": nil}), "Jwt verification fails"},
		{"required exp present", require, claims(map[string]any{"exp": n + 1e8}), ""},
		{"required exp missing", require, noExp(nil), "Jwt is expired"},
		{"no exp needed", subjects, noExp(map[string]any{"sub": "spiffe://example.com/x"}), ""},
		{"within max lifetime", maxLife, claims(map[string]any{"exp": n + 3599}), ""},
		{"at max lifetime", maxLife, claims(map[string]any{"exp": n + 3600}), "Jwt is expired"},
		{"over max lifetime", maxLife, claims(map[string]any{"exp": n + 86400}), "Jwt is expired"},
		{"max lifetime without exp", maxLife, noExp(nil), "Jwt is expired"},
	} {
		if v, ok := tc.claims["sub"]; ok && v == nil {
			delete(tc.claims, "sub")
		}
		st := get("/", "authorization", "Bearer "+s.sign(t, tc.claims))
		ok, _ := tc.c.run(st)
		if tc.failure == "" && !ok {
			t.Errorf("%s: refused with %+v", tc.name, st.Reply)
		}
		if tc.failure != "" && (ok || st.Reply.Status != 401 || st.Reply.Body != tc.failure) {
			t.Errorf("%s: passed %v reply %+v, want 401 %q", tc.name, ok, st.Reply, tc.failure)
		}
	}
	if _, err := compileErr(`{"providers":{"p":`+providerJSON("iss", jwks(t, s), `,"subjects":{"safe_regex":{"regex":"("}}`)+`}}`, &now); err == nil || !strings.Contains(err.Error(), "subjects.safe_regex") {
		t.Errorf("bad subjects regex: %v", err)
	}
}

// TestFailedStatusInMetadata checks failed_status_in_metadata: a failure's
// code (Envoy's Status number) and message under the key of the token's
// provider, or of the only provider when the token's is not known; kept
// when allow_missing_or_failed lets the request go on.
func TestFailedStatusInMetadata(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	other := newSigner(t, jose.ES256, "k")
	one := oneProvider(t, `,"failed_status_in_metadata":"fs"`, nil, s)
	two := compile(t, `{"providers":{
		"a":`+providerJSON("iss", jwks(t, s), `,"failed_status_in_metadata":"fa"`)+`,
		"b":`+providerJSON("iss-b", jwks(t, s), `,"failed_status_in_metadata":"fb","from_headers":[{"name":"x-b"}]`)+`},
		"rules":[{"match":{"prefix":"/failed"},"requires":{"allow_missing_or_failed":{}}},
		{"match":{"prefix":"/"},"requires":{"provider_name":"b"}}]}`, nil)
	good := s.sign(t, claims(nil))
	expired := s.sign(t, claims(map[string]any{"exp": testNow.Unix() - 3600}))
	forged := other.sign(t, claims(nil))
	forgedB := other.sign(t, claims(map[string]any{"iss": "iss-b"}))
	unknown := s.sign(t, claims(map[string]any{"iss": "nobody"}))
	bearer := func(tok string) []string { return []string{"authorization", "Bearer " + tok} }
	for _, tc := range []struct {
		name   string
		c      *compiled
		path   string
		hdrs   []string
		passed bool
		key    string // "" when no failure is recorded
		code   float64
		msg    string
	}{
		{"good", one, "/", bearer(good), true, "", 0, ""},
		{"expired", one, "/", bearer(expired), false, "fs", 3, "Jwt is expired"},
		{"missing", one, "/", nil, false, "fs", 1, "Jwt is missing"},
		{"bad format", one, "/", bearer("abc"), false, "fs", 4, "Jwt is not in the form of Header.Payload.Signature with two dots and 3 sections"},
		{"forged", one, "/", bearer(forged), false, "fs", 26, "Jwt verification fails"},
		{"provider's", two, "/", []string{"x-b", forgedB}, false, "fb", 26, "Jwt verification fails"},
		{"missing, two providers", two, "/", nil, false, "", 0, ""},
		{"allowed failure", two, "/failed", bearer(expired), true, "fa", 3, "Jwt is expired"},
		{"unknown issuer, two providers", two, "/failed", bearer(unknown), true, "", 0, ""},
		{"bad format, two providers", two, "/failed", bearer("abc"), true, "", 0, ""},
	} {
		st := get(tc.path, tc.hdrs...)
		if passed, _ := tc.c.run(st); passed != tc.passed {
			t.Errorf("%s: passed %v, reply %+v", tc.name, passed, st.Reply)
		}
		md := st.Metadata.GetFilterMetadata()[metadataNamespace].GetFields()
		if tc.key == "" {
			for _, k := range []string{"fs", "fa", "fb"} {
				if _, has := md[k]; has {
					t.Errorf("%s: metadata %v", tc.name, md)
				}
			}
			continue
		}
		f := md[tc.key].GetStructValue().GetFields()
		if len(f) != 2 || f["code"].GetNumberValue() != tc.code || f["message"].GetStringValue() != tc.msg {
			t.Errorf("%s: metadata %v, want %s code %v message %q", tc.name, md, tc.key, tc.code, tc.msg)
		}
	}
}

// TestClaimPath checks claim_to_headers' claim_path: keys matched whole,
// so that claims with dots in their names reach headers, while claim_name
// splits at dots; exactly one of the two must be set.
func TestClaimPath(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := oneProvider(t, `,"claim_to_headers":[
		{"header_name":"x-dotted","claim_path":[{"key":"a.b"},{"key":"c.d"}]},
		{"header_name":"x-url","claim_path":[{"key":"http://example.org/parent_token"}]},
		{"header_name":"x-split","claim_name":"a.b"},
		{"header_name":"x-plain","claim_path":[{"key":"sub"}]}]`, nil, s)
	tok := s.sign(t, claims(map[string]any{"a.b": map[string]any{"c.d": "x.y.z"}, "http://example.org/parent_token": "parent"}))
	st := get("/", "authorization", "Bearer "+tok)
	if ok, _ := c.run(st); !ok {
		t.Fatalf("refused: %+v", st.Reply)
	}
	for h, want := range map[string]string{"x-dotted": "x.y.z", "x-url": "parent", "x-plain": "alice"} {
		if got, _ := st.ReqHeaders.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if v, has := st.ReqHeaders.Get("x-split"); has {
		t.Errorf("claim_name a.b (a nested path) found %q in a claim named a.b", v)
	}
	for _, tc := range []struct{ extra, want string }{
		{`,"claim_to_headers":[{"header_name":"x","claim_name":"sub","claim_path":[{"key":"sub"}]}]`, `providers["p"].claim_to_headers[0].claim_path: exactly one of claim_name and claim_path must be set`},
		{`,"claim_to_headers":[{"header_name":"x"}]`, `providers["p"].claim_to_headers[0].claim_name: exactly one of claim_name and claim_path must be set`},
		{`,"claim_to_headers":[{"header_name":"x","claim_path":[{"key":""}]}]`, `providers["p"].claim_to_headers[0].claim_path[0].key: must be set`},
	} {
		_, err := compileErr(`{"providers":{"p":`+providerJSON("iss", jwks(t, s), tc.extra)+`}}`, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.extra, err, tc.want)
		}
	}
}

// TestSanitizedHeaders checks that a client cannot send the headers the
// filter fills: claim_to_headers names go from every request, open paths
// included; forward_payload_header from those a requirement verifies.
func TestSanitizedHeaders(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	c := compile(t, `{"providers":{"p":`+providerJSON("iss", jwks(t, s), `,"forward_payload_header":"x-payload",
		"claim_to_headers":[{"header_name":"x-sub","claim_name":"sub"}]`)+`},
		"rules":[{"match":{"prefix":"/open"}},
		{"match":{"prefix":"/optional"},"requires":{"allow_missing_or_failed":{}}},
		{"match":{"prefix":"/"},"requires":{"provider_name":"p"}}]}`, nil)
	tok := s.sign(t, claims(nil))
	forged := []string{"x-sub", "root", "x-payload", "forged"}
	for _, tc := range []struct {
		name, path   string
		token        string
		sub, payload string // "" when absent
		passed       bool
	}{
		{"open path", "/open", "", "", "forged", true},
		{"optional, no token", "/optional", "", "", "", true},
		{"optional, token", "/optional", tok, "alice", strings.Split(tok, ".")[1], true},
		{"required, token", "/", tok, "alice", strings.Split(tok, ".")[1], true},
	} {
		hdrs := append([]string{}, forged...)
		if tc.token != "" {
			hdrs = append(hdrs, "authorization", "Bearer "+tc.token)
		}
		st := get(tc.path, hdrs...)
		if passed, _ := c.run(st); passed != tc.passed {
			t.Fatalf("%s: passed %v, reply %+v", tc.name, passed, st.Reply)
		}
		for name, want := range map[string]string{"x-sub": tc.sub, "x-payload": tc.payload} {
			got := st.ReqHeaders.Values(name)
			if (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
				t.Errorf("%s: %s = %q, want %q", tc.name, name, got, want)
			}
		}
	}
}
