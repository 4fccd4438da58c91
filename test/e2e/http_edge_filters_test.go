package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The basic_auth filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("lets in the users of an htpasswd file, answers others 401 with a challenge, and follows the route's list", func() {
		dir := newDir()
		// alice's password is "wonderland", carol's "test" (htpasswd -s).
		htpasswd := filepath.Join(dir, "htpasswd")
		Expect(os.WriteFile(htpasswd, []byte("# users\nalice:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ=\n"), 0o600)).To(Succeed())
		port := freePort()
		admin := `{envoy.filters.http.basic_auth: ` + withType("type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute",
			`{users: {inline_string: "carol:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="}, realm: admin}`) + `}`
		sc := Start(dir, proxySpec{
			Port:   port,
			HCM:    "{stat_prefix: web}",
			Routes: `[{match: {prefix: /admin}, route: {cluster: up}, typed_per_filter_config: ` + admin + `}, {match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.basic_auth", "type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuth",
				`{users: {filename: `+htpasswd+`}, forward_username_header: x-user}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML())

		// curl sends the credential as browsers do.
		out := curl("-u", "alice:wonderland", listenerURL(port, "/hello"))
		Expect(out).To(ContainSubstring(`"X-User":"alice"`))

		out = curl("-i", "-u", "alice:nope", listenerURL(port, "/hello?x=1"))
		Expect(out).To(HavePrefix("HTTP/1.1 401 "))
		Expect(strings.ToLower(out)).To(ContainSubstring(`www-authenticate: basic realm="http://127.0.0.1:`))
		Expect(out).To(ContainSubstring(`/hello?x=1"`))
		Expect(out).To(HaveSuffix("User authentication failed. Invalid username/password combination."))

		r := httpDo(plain, "GET", listenerURL(port, "/hello"), nil, nil)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("User authentication failed. Missing username and password."))

		// The route's own list replaces the filter's.
		Expect(curl("-o", "/dev/null", "-w", "%{http_code}", "-u", "carol:test", listenerURL(port, "/admin"))).To(Equal("200"))
		out = curl("-i", "-u", "alice:wonderland", listenerURL(port, "/admin"))
		Expect(out).To(HavePrefix("HTTP/1.1 401 "))
		Expect(strings.ToLower(out)).To(ContainSubstring(`www-authenticate: basic realm="admin"`))

		Expect(httpStat(sc, "http.web.basic_auth.allowed")).To(Equal("2"))
		Expect(httpStat(sc, "http.web.basic_auth.denied")).To(Equal("3"))
	})

	It("refuses an htpasswd list in another format, with the field path", func() {
		r, _ := validate("b.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.basic_auth",
			"type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuth", `{users: {inline_string: "alice:$apr1$x$y"}}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.users: line 1: unsupported htpasswd format: please use {SHA} for 'alice'"))
	})
})

var _ = Describe("The cdn_loop filter", func() {
	It("appends its CDN id, and answers 502 to a request that looped through it too often", func() {
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Filters: "[" + httpFilter("envoy.filters.http.cdn_loop", "type.googleapis.com/envoy.extensions.filters.http.cdn_loop.v3.CdnLoopConfig",
				`{cdn_id: edge.example, max_allowed_occurrences: 1}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML())

		Expect(curl(listenerURL(port, "/"))).To(ContainSubstring(`"Cdn-Loop":"edge.example"`))
		Expect(curl("-H", "CDN-Loop: other; v=1, edge.example", listenerURL(port, "/"))).
			To(ContainSubstring(`"Cdn-Loop":"other; v=1, edge.example,edge.example"`))

		out := curl("-i", "-H", "CDN-Loop: edge.example, edge.example", listenerURL(port, "/"))
		Expect(out).To(HavePrefix("HTTP/1.1 502 "))
		Expect(out).To(HaveSuffix("The server has detected a loop between CDNs."))
		out = curl("-i", "-H", "CDN-Loop: edge.example;", listenerURL(port, "/"))
		Expect(out).To(HavePrefix("HTTP/1.1 400 "))
		Expect(out).To(HaveSuffix("Invalid CDN-Loop header in request."))
	})
})
