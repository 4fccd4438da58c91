package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	pemlib "encoding/pem"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

const (
	jwtAuthnType     = "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication"
	jwtAuthnPerRoute = "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig"
)

// jwtKey is a signing key made by the test and its JWKS entry.
type jwtKey struct {
	alg jose.SignatureAlgorithm
	kid string
	key any
}

// signJWT signs claims with k, as an identity provider would.
func (k jwtKey) signJWT(claims map[string]any) string {
	GinkgoHelper()
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, (&jose.SignerOptions{}).WithHeader("kid", k.kid).WithType("JWT"))
	Expect(err).NotTo(HaveOccurred())
	payload, err := json.Marshal(claims)
	Expect(err).NotTo(HaveOccurred())
	obj, err := sg.Sign(payload)
	Expect(err).NotTo(HaveOccurred())
	tok, err := obj.CompactSerialize()
	Expect(err).NotTo(HaveOccurred())
	return tok
}

// jwksOf is the JWKS of the keys' public halves.
func jwksOf(keys ...jwtKey) string {
	GinkgoHelper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		jwk := jose.JSONWebKey{Key: k.key, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
		set.Keys = append(set.Keys, jwk.Public())
	}
	b, err := json.Marshal(set)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("The JWT authentication filter", func() {
	It("verifies local and remote JWKS tokens with Envoy's replies, forwards claims, caches and refetches the JWKS, and survives a JWKS server that is down", func() {
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		remoteKey := jwtKey{alg: jose.ES256, kid: "ec-1", key: ecKey}
		localKey := jwtKey{alg: jose.RS256, kid: "rsa-1", key: rsaKey}

		// The JWKS server, counting its fetches.
		var fetches, asyncFetches atomic.Int64
		jwksPort := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/.well-known/jwks.json":
				fetches.Add(1)
			case "/async/jwks.json":
				asyncFetches.Add(1)
			default:
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, jwksOf(remoteKey))
		}), false))
		// The upstream tells what reached it.
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "auth=%q payload=%q sub=%q", r.Header.Get("Authorization"), r.Header.Get("X-Payload"), r.Header.Get("X-Sub"))
		}), false))
		down := freePort() // nothing listens there

		port := freePort()
		remoteJWKS := func(cluster string) string {
			return fmt.Sprintf(`{http_uri: {uri: "http://jwks.example/.well-known/jwks.json", cluster: %s, timeout: 0.5s}, cache_duration: 1s}`, cluster)
		}
		config := proxySpec{
			Port: port,
			HCM:  `{stat_prefix: edge, access_log: [` + stdoutLog("JWTLOG %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS%\n") + `]}`,
			Routes: `[{match: {prefix: /open}, route: {cluster: up}, typed_per_filter_config: {jwt: ` + withType(jwtAuthnPerRoute, `{disabled: true}`) + `}},
				{match: {prefix: /named}, route: {cluster: up}, typed_per_filter_config: {jwt: ` + withType(jwtAuthnPerRoute, `{requirement_name: remote-only}`) + `}},
				{match: {prefix: /}, route: {cluster: up}}]`,
			Filters: `[` + httpFilter("jwt", jwtAuthnType, `{
				providers: {
					local: {issuer: https://local.example, audiences: [api], local_jwks: {inline_string: `+quoteJSON(jwksOf(localKey))+`},
						forward_payload_header: x-payload, claim_to_headers: [{header_name: x-sub, claim_name: sub}]},
					remote: {issuer: https://remote.example, remote_jwks: `+remoteJWKS("jwks")+`, forward: true},
					async: {issuer: https://async.example, remote_jwks: {http_uri: {uri: "http://jwks.example/async/jwks.json", cluster: jwks, timeout: 0.5s},
						cache_duration: 60s, async_fetch: {fast_listener: true, failed_refetch_duration: 0.2s}}},
					down: {issuer: https://down.example, remote_jwks: `+remoteJWKS("nowhere")+`, from_headers: [{name: x-down-token}]}},
				requirement_map: {remote-only: {provider_name: remote}},
				rules: [
					{match: {prefix: /remote}, requires: {provider_name: remote}},
					{match: {prefix: /down}, requires: {provider_name: down}},
					{match: {prefix: /async}, requires: {provider_name: async}},
					{match: {prefix: /optional}, requires: {requires_any: {requirements: [{provider_name: down}, {allow_missing_or_failed: {}}]}}},
					{match: {prefix: /}, requires: {provider_name: local}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}, {Name: "jwks", Port: jwksPort}, {Name: "nowhere", Port: down}},
		}.YAML()
		s := Start(newDir(), config, "--file-flush-interval-msec", "50")
		client := &http.Client{Timeout: 10 * time.Second}
		do := func(path string, kv ...string) Response {
			GinkgoHelper()
			h := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Set(kv[i], kv[i+1])
			}
			return httpDo(client, "GET", listenerURL(port, path), nil, h)
		}
		now := time.Now().Unix()
		localTok := localKey.signJWT(map[string]any{"iss": "https://local.example", "aud": "api", "sub": "alice", "exp": now + 600})
		remoteTok := remoteKey.signJWT(map[string]any{"iss": "https://remote.example", "sub": "bob", "exp": now + 600})
		downTok := remoteKey.signJWT(map[string]any{"iss": "https://down.example", "exp": now + 600})

		By("async_fetch: the keys are fetched before any request needs them")
		Eventually(asyncFetches.Load).Should(Equal(int64(1)))
		asyncTok := remoteKey.signJWT(map[string]any{"iss": "https://async.example", "exp": now + 600})
		Expect(do("/async", "Authorization", "Bearer "+asyncTok).Status).To(Equal(200))
		Expect(asyncFetches.Load()).To(Equal(int64(1)))

		By("a missing token: 401, Envoy's body, challenge and details")
		r := do("/app/x?y=1")
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Jwt is missing"))
		Expect(r.Header.Get("WWW-Authenticate")).To(Equal(fmt.Sprintf(`Bearer realm="http://127.0.0.1:%d/app/x?y=1"`, port)))
		Eventually(s.Stdout).Should(ContainSubstring("JWTLOG /app/x?y=1 401 jwt_authn_access_denied{Jwt_is_missing}\n"))

		By("a good local token: forwarded payload and claim, the token removed")
		r = do("/app", "Authorization", "Bearer "+localTok)
		Expect(r.Status).To(Equal(200), r.Body)
		payload := strings.Split(localTok, ".")[1]
		Expect(r.Body).To(Equal(fmt.Sprintf(`auth="" payload=%q sub="alice"`, payload)))

		By("an expired token, a wrong audience, a token of another key")
		expired := localKey.signJWT(map[string]any{"iss": "https://local.example", "aud": "api", "exp": now - 3600})
		r = do("/app", "Authorization", "Bearer "+expired)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Jwt is expired"))
		Expect(r.Header.Get("WWW-Authenticate")).To(Equal(fmt.Sprintf(`Bearer realm="http://127.0.0.1:%d/app", error="invalid_token"`, port)))
		r = do("/app", "Authorization", "Bearer "+localKey.signJWT(map[string]any{"iss": "https://local.example", "aud": "web"}))
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("Audiences in Jwt are not allowed"))
		forged := jwtKey{alg: jose.RS256, kid: "rsa-1", key: mustRSA()}.signJWT(map[string]any{"iss": "https://local.example", "aud": "api"})
		r = do("/app", "Authorization", "Bearer "+forged)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Jwt verification fails"))

		By("a remote JWKS: fetched over its cluster once, cached, refetched after cache_duration")
		for range 3 {
			r = do("/remote", "Authorization", "Bearer "+remoteTok)
			Expect(r.Status).To(Equal(200), r.Body)
		}
		Expect(r.Body).To(HavePrefix(`auth="Bearer ` + remoteTok + `"`)) // forward: true
		Expect(fetches.Load()).To(Equal(int64(1)))
		time.Sleep(1200 * time.Millisecond)
		r = do("/remote", "Authorization", "Bearer "+remoteTok)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(fetches.Load()).To(Equal(int64(2)))

		By("the route's requirement_name and a disabled route")
		Expect(do("/named/x").Status).To(Equal(401))
		Expect(do("/named/x", "Authorization", "Bearer "+remoteTok).Status).To(Equal(200))
		Expect(do("/open/x").Status).To(Equal(200))

		By("a JWKS server that is down: the fetch fails within its timeout; allow_missing_or_failed lets the request through")
		start := time.Now()
		r = do("/down", "X-Down-Token", downTok)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Jwks remote fetch is failed"))
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		Expect(do("/optional", "X-Down-Token", downTok).Status).To(Equal(200))
		Expect(do("/optional").Status).To(Equal(200))

		for name, want := range map[string]string{
			"http.edge.jwt_authn.allowed": "10",
			"http.edge.jwt_authn.denied":  "6",
			// Two of /remote, one of async_fetch.
			"http.edge.jwt_authn.jwks_fetch_success": "3",
		} {
			Expect(statValue(s, name)).To(Equal(want), name)
		}
		// /down, then /optional's two requirements (and async_fetch's
		// first tries, should the cluster not have been ready).
		Expect(strconv.Atoi(statValue(s, "http.edge.jwt_authn.jwks_fetch_failed"))).To(BeNumerically(">=", 3))
	})
})

// quoteJSON is s as a JSON (and YAML) string.
func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mustRSA is a fresh RSA key.
func mustRSA() *rsa.PrivateKey {
	GinkgoHelper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	return k
}

var _ = Describe("JWT authentication configuration errors", func() {
	It("names the fields Outrigger refuses and the requirements that name unknown providers", func() {
		config := func(providers string) string {
			return proxySpec{
				Port: freePort(),
				Filters: `[` + httpFilter("jwt", jwtAuthnType, `{providers: `+providers+`,
					rules: [{match: {prefix: /}, requires: {requires_any: {requirements: [{provider_name: idp}, {provider_name: ghost}]}}}]}`) + `]`,
				Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
			}.YAML()
		}
		filter := `static_resources\.listeners\[0\]\.filter_chains\[0\]\.filters\[0\]\.typed_config\.http_filters\[0\]\.typed_config\.`
		// Envoy retries the JWKS fetch on fixed conditions: retry_on is
		// refused.
		r, _ := validate("bootstrap.yaml", config(`{idp: {issuer: https://idp.example,
			remote_jwks: {http_uri: {uri: "http://idp.example/jwks", cluster: up, timeout: 1s}, retry_policy: {num_retries: 2, retry_on: "5xx"}}}}`))
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(MatchRegexp(filter + `providers\["idp"\]\.remote_jwks\.retry_policy\.retry_on: .*not supported`))
		r, _ = validate("bootstrap.yaml", config(`{idp: {issuer: https://idp.example,
			remote_jwks: {http_uri: {uri: "http://idp.example/jwks", cluster: up, timeout: 1s}, retry_policy: {retry_back_off: {base_interval: 2s, max_interval: 1s}}}}}`))
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(MatchRegexp(filter + `providers\["idp"\]\.remote_jwks\.retry_policy\.retry_back_off\.max_interval: max_interval must be greater than or equal to the base_interval`))

		// local_jwks is a JWKS, as in Envoy: a PEM key is not one.
		pem, err := x509.MarshalPKIXPublicKey(&mustRSA().PublicKey)
		Expect(err).NotTo(HaveOccurred())
		pemText := string(pemlib.EncodeToMemory(&pemlib.Block{Type: "PUBLIC KEY", Bytes: pem}))
		r, _ = validate("bootstrap.yaml", config(`{idp: {issuer: https://idp.example, local_jwks: {inline_string: `+quoteJSON(pemText)+`}}}`))
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(MatchRegexp(filter + `providers\["idp"\]\.local_jwks: Provider 'idp' in jwt_authn config has invalid local jwks: Jwks is an invalid JSON`))

		r, _ = validate("bootstrap.yaml", config(`{idp: {issuer: https://idp.example, remote_jwks: {http_uri: {uri: "http://idp.example/jwks", cluster: up, timeout: 1s}}}}`))
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(MatchRegexp(filter + `rules\[0\]\.requires\.requires_any\.requirements\[1\]\.provider_name: required provider \['ghost'\] is not configured`))
	})
})

var _ = Describe("JWT authentication subjects and lifetimes", func() {
	It("refuses subjects the provider may not assert and tokens without exp or living longer than max_lifetime", func() {
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		key := jwtKey{alg: jose.ES256, kid: "ec-1", key: ecKey}
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "up") }), false))
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Filters: `[` + httpFilter("jwt", jwtAuthnType, `{providers: {svid: {issuer: https://svid.example,
				local_jwks: {inline_string: `+quoteJSON(jwksOf(key))+`},
				subjects: {prefix: "spiffe://example.org/"}, require_expiration: true, max_lifetime: 3600s}},
				rules: [{match: {prefix: /}, requires: {provider_name: svid}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 10 * time.Second}
		now := time.Now().Unix()
		for _, tc := range []struct {
			claims map[string]any
			status int
			body   string
		}{
			{map[string]any{"iss": "https://svid.example", "sub": "spiffe://example.org/web", "exp": now + 600}, 200, "up"},
			{map[string]any{"iss": "https://svid.example", "sub": "spiffe://other.org/web", "exp": now + 600}, 401, "Jwt verification fails"},
			{map[string]any{"iss": "https://svid.example", "sub": "spiffe://example.org/web"}, 401, "Jwt is expired"},
			{map[string]any{"iss": "https://svid.example", "sub": "spiffe://example.org/web", "exp": now + 86400}, 401, "Jwt is expired"},
		} {
			r := httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"Authorization": {"Bearer " + key.signJWT(tc.claims)}})
			Expect(r.Status).To(Equal(tc.status), "%v", tc.claims)
			Expect(r.Body).To(Equal(tc.body), "%v", tc.claims)
		}
	})
})

var _ = Describe("JWT authentication failed_status_in_metadata and claim_path", func() {
	It("records each failure's Envoy status code and message in the dynamic metadata, read by the access log, and forwards a dotted claim in place of the client's header", func() {
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		key := jwtKey{alg: jose.ES256, kid: "ec-1", key: ecKey}
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "up "+r.Header.Get("x-parent")) }), false))
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `access_log: [{name: log, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
				log_format: {text_format_source: {inline_string: "FS %REQ(:PATH)% %RESPONSE_CODE% %DYNAMIC_METADATA(envoy.filters.http.jwt_authn:why:code)% %DYNAMIC_METADATA(envoy.filters.http.jwt_authn:why:message)%\n"}}}}]`,
			Filters: `[` + httpFilter("jwt", jwtAuthnType, `{providers: {idp: {issuer: https://idp.example,
				local_jwks: {inline_string: `+quoteJSON(jwksOf(key))+`}, failed_status_in_metadata: why,
				claim_to_headers: [{header_name: x-parent, claim_path: [{key: "http://example.org/parent_token"}]}]}},
				rules: [{match: {prefix: /open}, requires: {allow_missing_or_failed: {}}}, {match: {prefix: /}, requires: {provider_name: idp}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "--file-flush-interval-msec", "50")
		client := &http.Client{Timeout: 10 * time.Second}
		now := time.Now().Unix()
		good := key.signJWT(map[string]any{"iss": "https://idp.example", "exp": now + 600, "http://example.org/parent_token": "parent"})
		expired := key.signJWT(map[string]any{"iss": "https://idp.example", "exp": now - 3600})
		for _, tc := range []struct {
			path, token string
			status      int
			body, log   string
		}{
			{"/good", good, 200, "up parent", "FS /good 200 - -"},
			{"/expired", expired, 401, "Jwt is expired", "FS /expired 401 3 Jwt is expired"},
			{"/missing", "", 401, "Jwt is missing", "FS /missing 401 1 Jwt is missing"},
			{"/open", expired, 200, "up ", "FS /open 200 3 Jwt is expired"},
		} {
			// A client's own x-parent never reaches the upstream.
			h := http.Header{"X-Parent": {"forged"}}
			if tc.token != "" {
				h.Set("Authorization", "Bearer "+tc.token)
			}
			r := httpDo(client, "GET", listenerURL(port, tc.path), nil, h)
			Expect(r.Status).To(Equal(tc.status), tc.path)
			Expect(r.Body).To(Equal(tc.body), tc.path)
			Eventually(s.Stdout).Should(ContainSubstring(tc.log+"\n"), tc.path)
		}
	})
})

var _ = Describe("JWT authentication remote JWKS before serving, and unverified claims", func() {
	It("keeps the listener warming until the first JWKS fetch (fast_listener false), retries that fetch per retry_policy, and forwards the claims of unverified tokens with extract_only_without_validation", func() {
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		key := jwtKey{alg: jose.ES256, kid: "ec-1", key: ecKey}
		// The first fetch waits until the spec releases it (within its
		// per-try timeout, max_interval), then fails with a 503; the retry
		// gets the keys.
		var fetches atomic.Int64
		release := make(chan struct{})
		var releaseOnce sync.Once
		DeferCleanup(func() { releaseOnce.Do(func() { close(release) }) })
		jwksPort := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fetches.Add(1) == 1 {
				<-release
				w.WriteHeader(503)
				return
			}
			fmt.Fprint(w, jwksOf(key))
		}), false))
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "auth=%q sub=%q verified=%q", r.Header.Get("Authorization"), r.Header.Get("X-Sub"), r.Header.Get("X-Jwt-Signature-Verified"))
		}), false))
		port := freePort()
		s := Launch(newDir(), "bootstrap.yaml", proxySpec{
			Port: port,
			Filters: `[` + httpFilter("jwt", jwtAuthnType, `{providers: {idp: {issuer: https://idp.example,
				remote_jwks: {http_uri: {uri: "http://idp.example/jwks.json", cluster: jwks, timeout: 30s},
					async_fetch: {fast_listener: false}, retry_policy: {num_retries: 2, retry_back_off: {base_interval: 0.01s, max_interval: 20s}}},
				claim_to_headers: [{header_name: x-sub, claim_name: sub}]}},
				rules: [{match: {prefix: /extract}, requires: {extract_only_without_validation: {}}}, {match: {prefix: /}, requires: {provider_name: idp}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}, {Name: "jwks", Port: jwksPort}},
		}.YAML())
		s.WaitForAdmin()

		By("the listener waits for the first fetch: not ready, and /init_dump names the fetch")
		Eventually(func() string { return s.Get("/init_dump").Body }).Should(ContainSubstring("Jwks async fetching url=http://idp.example/jwks.json"))
		Consistently(func() int { return s.Get("/ready").Status }, "300ms").Should(Equal(503))
		Expect(fetches.Load()).To(Equal(int64(1)))

		By("the first try fails, the retry gets the keys: the server goes LIVE with them")
		releaseOnce.Do(func() { close(release) })
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		Expect(fetches.Load()).To(Equal(int64(2)))
		Expect(s.Get("/init_dump").Body).NotTo(ContainSubstring("Jwks async fetching"))
		client := &http.Client{Timeout: 10 * time.Second}
		do := func(path, token string) Response {
			GinkgoHelper()
			h := http.Header{}
			if token != "" {
				h.Set("Authorization", "Bearer "+token)
			}
			return httpDo(client, "GET", listenerURL(port, path), nil, h)
		}
		now := time.Now().Unix()
		r := do("/app", key.signJWT(map[string]any{"iss": "https://idp.example", "sub": "alice", "exp": now + 600}))
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal(`auth="" sub="alice" verified=""`))
		// No request had to fetch: the keys came before the first one.
		Expect(fetches.Load()).To(Equal(int64(2)))
		Expect(statValue(s, "http.l.jwt_authn.jwks_fetch_success")).To(Equal("1"))

		By("extract_only_without_validation: a token of an unknown key, expired, passes with its claims and x-jwt-signature-verified: false")
		forged := jwtKey{alg: jose.ES256, kid: "ec-1", key: mustEC()}.signJWT(map[string]any{"iss": "https://idp.example", "sub": "mallory", "exp": now - 3600})
		r = do("/extract", forged)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal(`auth="" sub="mallory" verified="false"`))
		Expect(do("/extract", "").Body).To(Equal(`auth="" sub="" verified=""`))
		r = do("/app", forged)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Jwt is expired"))
	})
})

// mustEC is a fresh P-256 key.
func mustEC() *ecdsa.PrivateKey {
	GinkgoHelper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	return k
}

var _ = Describe("JWT authentication filter_state_rules", func() {
	It("requires a token on the connections whose server name sni_cluster keeps in the filter state, and none on the others", func() {
		ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		key := jwtKey{alg: jose.ES256, kid: "ec-1", key: ecKey}
		ca, err := tlstest.NewCA("jwt sni CA")
		Expect(err).NotTo(HaveOccurred())
		leaf, err := ca.Issue(tlstest.Options{CommonName: "proxy", DNS: []string{"secure.test", "open.test"}})
		Expect(err).NotTo(HaveOccurred())
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "up") }), false))
		port := freePort()
		jwt := httpFilter("jwt", jwtAuthnType, `{providers: {idp: {issuer: https://idp.example, local_jwks: {inline_string: `+quoteJSON(jwksOf(key))+`}}},
			rules: [{match: {prefix: /health}}],
			filter_state_rules: {name: envoy.tcp_proxy.cluster, requires: {secure.test: {provider_name: idp}}}}`)
		listener := fmt.Sprintf(`{name: sni, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
			listener_filters: [{name: envoy.filters.listener.tls_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector}}],
			filter_chains: [{
				transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
					common_tls_context: {tls_certificates: [{certificate_chain: {inline_string: %s}, private_key: {inline_string: %s}}]}}},
				filters: [{name: envoy.filters.network.sni_cluster, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.sni_cluster.v3.SniCluster}},
					{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
						stat_prefix: sni, route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: up}}]}]},
						http_filters: [%s, {name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}]}`,
			port, quoteJSON(string(leaf.CertPEM)), quoteJSON(string(leaf.KeyPEM)), jwt)
		Start(newDir(), bootstrapOf([]string{listener}, []string{staticCluster("up", "127.0.0.1", up)}))

		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		get := func(serverName, path, token string) Response {
			GinkgoHelper()
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{ServerName: serverName, RootCAs: roots},
			}}
			h := http.Header{}
			if token != "" {
				h.Set("Authorization", "Bearer "+token)
			}
			return httpDo(client, "GET", fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil, h)
		}
		tok := key.signJWT(map[string]any{"iss": "https://idp.example", "exp": time.Now().Unix() + 600})
		r := get("secure.test", "/app", "")
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Jwt is missing"))
		Expect(get("secure.test", "/app", tok).Status).To(Equal(200))
		// A rule that matches decides first, even one requiring nothing.
		Expect(get("secure.test", "/health", "").Status).To(Equal(200))
		// Another server name is no key of requires: nothing required.
		Expect(get("open.test", "/app", "").Status).To(Equal(200))
	})
})
