package e2e

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Compatibility tier: an older user's configuration served", func() {
	It("serves legacy-user.yaml: lower-case enums, a name-only router, a TypedStruct health check, deprecated fields (google_re2, cluster-level HTTP options) with their warnings", func() {
		dns := startDNSServer()
		port := freePort()
		cfg := compatConfig("legacy-user.yaml", compatPeers{
			listeners: []int{port},
			clusters: map[string]int{
				"service_backend": namedUpstream("backend"),
				"service_canary":  namedUpstream("canary"),
			},
			dns: dns,
		})
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}

		r := httpDo(client, "GET", listenerURL(port, "/orders"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("backend host=backend.internal path=/orders"))
		// The deprecated exact_match still matches.
		r = httpDo(client, "GET", listenerURL(port, "/orders"), nil, http.Header{"X-Canary": {"true"}})
		Expect(r.Body).To(Equal("canary host=canary.internal path=/orders"))
		// So does the regex with the deprecated google_re2 engine.
		r = httpDo(client, "GET", listenerURL(port, "/v2/items"), nil, nil)
		Expect(r.Body).To(Equal("canary host=canary.internal path=/v2/items"))
		// The health check from inside its TypedStruct answers itself.
		r = httpDo(client, "GET", listenerURL(port, "/healthz"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(statValue(s, "cluster.service_backend.upstream_rq_total")).To(Equal("1"))
		// Each deprecated field is warned about once and counted.
		for _, field := range []string{
			"envoy.config.bootstrap.v3.Admin.access_log_path",
			"envoy.config.route.v3.HeaderMatcher.exact_match",
			"envoy.type.matcher.v3.RegexMatcher.google_re2",
			"envoy.config.cluster.v3.Cluster.http_protocol_options",
			"envoy.config.cluster.v3.Cluster.common_http_protocol_options",
		} {
			Expect(s.Stderr()).To(ContainSubstring("Using deprecated option '" + field + "'"))
		}
		Expect(statValue(s, "runtime.deprecated_feature_use")).NotTo(Equal("0"))
		// The file logger on /dev/stdout writes Envoy's default format.
		Eventually(s.Stdout, 10*time.Second).Should(ContainSubstring(`"GET /orders HTTP/1.1" 200 - 0 `))
	})
})
