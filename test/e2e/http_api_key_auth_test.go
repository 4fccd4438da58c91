package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const apiKeyAuthType = "type.googleapis.com/envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth"

var _ = Describe("The api_key_auth filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("lets in the keys of its credentials from a header, query or cookie, answers 401 and 403 as Envoy, and follows the route's settings", func() {
		dir := newDir()
		port := freePort()
		admins := `{envoy.filters.http.api_key_auth: ` + withType("type.googleapis.com/envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute",
			`{allowed_clients: [alice]}`) + `}`
		other := `{envoy.filters.http.api_key_auth: ` + withType("type.googleapis.com/envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute",
			`{credentials: [{key: k3, client: carol}], forwarding: {header: x-who}}`) + `}`
		sc := Start(dir, proxySpec{
			Port: port,
			HCM:  `{stat_prefix: web, access_log: [` + fileLog(dir+"/access.log", "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS%\n") + `]}`,
			Routes: `[{match: {prefix: /admin}, route: {cluster: up}, typed_per_filter_config: ` + admins + `},
			  {match: {prefix: /other}, route: {cluster: up}, typed_per_filter_config: ` + other + `},
			  {match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.api_key_auth", apiKeyAuthType,
				`{credentials: [{key: k1, client: alice}, {key: k2, client: bob}],
				  key_sources: [{header: X-API-KEY}, {query: api_key}, {cookie: session-key}],
				  forwarding: {header: x-client-id, hide_credentials: true}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML(), "--file-flush-interval-msec", "100")

		// A header key, its Bearer prefix dropped; the client goes
		// upstream, the key does not.
		seen := tailSeen(httpDo(plain, "GET", listenerURL(port, "/hello"), nil, http.Header{"X-Api-Key": {"Bearer k2"}}))
		Expect(seen).To(HaveKeyWithValue("X-Client-Id", "bob"))
		Expect(seen).NotTo(HaveKey("X-Api-Key"))
		// The first of several header values is the key.
		out := curl("-H", "X-API-KEY: k1", "-H", "X-API-KEY: k2", listenerURL(port, "/hello"))
		Expect(out).To(ContainSubstring(`"X-Client-Id":"alice"`))
		// A query parameter, decoded; the others go upstream as sent.
		seen = tailSeen(httpDo(plain, "GET", listenerURL(port, "/q?a=%20&api%5Fkey=k%31&b=2"), nil, nil))
		Expect(seen).To(HaveKeyWithValue("X-Client-Id", "alice"))
		Expect(seen).To(HaveKeyWithValue(":path", "/q?a=%20&b=2"))
		// A cookie; the other cookies stay.
		seen = tailSeen(httpDo(plain, "GET", listenerURL(port, "/c"), nil, http.Header{"Cookie": {"a=1; session-key=k2; b=2"}}))
		Expect(seen).To(HaveKeyWithValue("X-Client-Id", "bob"))
		Expect(seen).To(HaveKeyWithValue("Cookie", "a=1; b=2"))

		r := httpDo(plain, "GET", listenerURL(port, "/hello"), nil, nil)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Client authentication failed."))
		r = httpDo(plain, "GET", listenerURL(port, "/hello"), nil, http.Header{"X-Api-Key": {"k9"}})
		Expect(r.Status).To(Equal(401))

		// The route's allowed_clients: alice passes, bob is forbidden.
		Expect(httpDo(plain, "GET", listenerURL(port, "/admin?api_key=k1"), nil, nil).Status).To(Equal(200))
		r = httpDo(plain, "GET", listenerURL(port, "/admin?api_key=k2"), nil, nil)
		Expect(r.Status).To(Equal(403))
		Expect(r.Body).To(Equal("Client is forbidden."))

		// The route's credentials and forwarding replace the filter's
		// (the key is no longer hidden), its key sources stay.
		seen = tailSeen(httpDo(plain, "GET", listenerURL(port, "/other"), nil, http.Header{"X-Api-Key": {"k3"}}))
		Expect(seen).To(HaveKeyWithValue("X-Who", "carol"))
		Expect(seen).To(HaveKeyWithValue("X-Api-Key", "k3"))
		Expect(httpDo(plain, "GET", listenerURL(port, "/other"), nil, http.Header{"X-Api-Key": {"k1"}}).Status).To(Equal(401))

		Expect(httpStat(sc, "http.web.api_key_auth.allowed")).To(Equal("6"))
		Expect(httpStat(sc, "http.web.api_key_auth.unauthorized")).To(Equal("3"))
		Expect(httpStat(sc, "http.web.api_key_auth.forbidden")).To(Equal("1"))
		Eventually(func() string { return readFile(dir + "/access.log") }).Should(And(
			ContainSubstring("/hello 401 missing_api_key\n"),
			ContainSubstring("/hello 401 unkonwn_api_key\n"),
			ContainSubstring("/admin?api_key=k2 403 client_not_allowed\n")))
	})

	It("refuses a duplicated key and an empty key source, with the field path", func() {
		r, _ := validate("a.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.api_key_auth", apiKeyAuthType,
			`{credentials: [{key: secret-key, client: a}, {key: secret-key, client: b}]}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.credentials[1].key: duplicated credential key"))
		Expect(r.Stderr).NotTo(ContainSubstring("secret-key"))
		r, _ = validate("b.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.api_key_auth", apiKeyAuthType,
			`{key_sources: [{header: x}, {}]}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.key_sources[1]: one of 'header'/'query'/'cookie' must be set"))
	})
})
