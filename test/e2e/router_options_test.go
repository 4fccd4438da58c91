package e2e

import (
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// routerGet sends a GET with the given headers to the listener on port and
// returns the status and body.
func routerGet(port int, path string, header map[string]string) (int, string) {
	GinkgoHelper()
	req, err := http.NewRequest("GET", listenerURL(port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

var _ = Describe("router strict_check_headers, respect_expected_rq_timeout, suppress_grpc_request_failure_code_stats", func() {
	It("answers 400 to an invalid value of a strictly checked header, and forwards it without the check", func() {
		up := startHeadUpstream()
		strict, plain := freePort(), freePort()
		side := func(name string, port int, router string) proxySpec {
			return proxySpec{Port: port, Listener: "{name: " + name + "}", HCM: "{stat_prefix: " + name + ", " + internalLoopback + "}",
				Router: router, Clusters: []proxyCluster{{Name: name, Port: up.port}}}
		}
		p := side("strict", strict, "{strict_check_headers: [x-envoy-max-retries, x-envoy-retry-on, x-envoy-upstream-rq-timeout-ms]}")
		p.More = []proxySpec{side("plain", plain, "")}
		s := Start(newDir(), p.YAML())

		status, body := routerGet(strict, "/a", map[string]string{"x-envoy-max-retries": "abc"})
		Expect(status).To(Equal(400))
		Expect(body).To(Equal("invalid header 'x-envoy-max-retries' with value 'abc'"))
		status, body = routerGet(strict, "/b", map[string]string{"x-envoy-retry-on": "5xx,no-such-condition"})
		Expect(status).To(Equal(400))
		Expect(body).To(Equal("invalid header 'x-envoy-retry-on' with value '5xx,no-such-condition'"))
		status, _ = routerGet(strict, "/c", map[string]string{"x-envoy-max-retries": "2", "x-envoy-retry-on": "5xx,reset", "x-envoy-upstream-rq-timeout-ms": " 900 "})
		Expect(status).To(Equal(200))
		Expect(statValue(s, "cluster.strict.upstream_rq_total")).To(Equal("1"))

		status, _ = routerGet(plain, "/d", map[string]string{"x-envoy-max-retries": "abc"})
		Expect(status).To(Equal(200))
	})

	It("takes an internal request's x-envoy-expected-rq-timeout-ms as its timeout with respect_expected_rq_timeout", func() {
		up := startHeadUpstream()
		respect, plain := freePort(), freePort()
		side := func(name string, port int, router string) proxySpec {
			return proxySpec{Port: port, Listener: "{name: " + name + "}", HCM: "{stat_prefix: " + name + ", " + internalLoopback + "}",
				Router: router, Routes: `[{match: {prefix: /}, route: {cluster: ` + name + `, timeout: 20s}}]`,
				Clusters: []proxyCluster{{Name: name, Port: up.port}}}
		}
		p := side("respect", respect, "{respect_expected_rq_timeout: true}")
		p.More = []proxySpec{side("plain", plain, "")}
		Start(newDir(), p.YAML())
		expected := func() string {
			for line := range strings.SplitSeq(up.last(), "\r\n") {
				if v, ok := strings.CutPrefix(line, "x-envoy-expected-rq-timeout-ms: "); ok {
					return v
				}
			}
			return ""
		}

		status, _ := routerGet(respect, "/a", map[string]string{"x-envoy-expected-rq-timeout-ms": "1234", "x-envoy-upstream-rq-timeout-ms": "777"})
		Expect(status).To(Equal(200))
		Expect(expected()).To(Equal("1234"), "the expected timeout wins:\n%s", up.last())
		status, _ = routerGet(respect, "/b", map[string]string{"x-envoy-upstream-rq-timeout-ms": "777"})
		Expect(status).To(Equal(200))
		Expect(expected()).To(Equal("777"))
		status, _ = routerGet(respect, "/c", nil)
		Expect(status).To(Equal(200))
		Expect(expected()).To(Equal("20000"))

		status, _ = routerGet(plain, "/d", map[string]string{"x-envoy-expected-rq-timeout-ms": "1234"})
		Expect(status).To(Equal(200))
		Expect(expected()).To(Equal("20000"), "without the option the route timeout stands")
	})

	It("leaves gRPC requests out of the cluster's code stats with suppress_grpc_request_failure_code_stats", func() {
		up := startHeadUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{Port: port, Router: "{suppress_grpc_request_failure_code_stats: true}",
			Clusters: []proxyCluster{{Name: "up", Port: up.port}}}.YAML())

		status, _ := routerGet(port, "/svc/Method", map[string]string{"content-type": "application/grpc"})
		Expect(status).To(Equal(200))
		// The upstream request completes after the client has its answer.
		Eventually(func() string { return statValue(s, "cluster.up.upstream_rq_completed") }).Should(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_200")).To(Equal(""))
		Expect(statValue(s, "cluster.up.upstream_rq_2xx")).To(Equal("0"))

		status, _ = routerGet(port, "/plain", nil)
		Expect(status).To(Equal(200))
		Eventually(func() string { return statValue(s, "cluster.up.upstream_rq_completed") }).Should(Equal("2"))
		Expect(statValue(s, "cluster.up.upstream_rq_200")).To(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_2xx")).To(Equal("1"))
	})
})

var _ = Describe("HeaderValue raw_value and RouteAction.early_data_policy", func() {
	It("adds a header given as raw_value bytes on a route that has the default early data policy", func() {
		up := startHeadUpstream()
		port := freePort()
		Start(newDir(), proxySpec{Port: port, Clusters: []proxyCluster{{Name: "up", Port: up.port}},
			// cmF3IGJ5dGVz is "raw bytes".
			Routes: `[{match: {prefix: /}, request_headers_to_add: [{header: {key: x-raw, raw_value: cmF3IGJ5dGVz}}],
  route: {cluster: up, early_data_policy: {name: envoy.route.early_data_policy.default,
    typed_config: {"@type": type.googleapis.com/envoy.extensions.early_data.v3.DefaultEarlyDataPolicy}}}}]`,
		}.YAML())
		Expect(rawExchange(port, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(up.last()).To(ContainSubstring("\r\nx-raw: raw bytes\r\n"))
	})

	It("refuses a raw_value with a line break, and both value and raw_value, with their paths", func() {
		for _, header := range []string{`{key: x-raw, raw_value: eQ15}`, `{key: x-raw, value: 'v', raw_value: eQ==}`} {
			cfg := proxySpec{Port: freePort(), Clusters: []proxyCluster{{Name: "up", Port: 1}},
				Routes: `[{match: {prefix: /}, request_headers_to_add: [{header: ` + header + `}], route: {cluster: up}}]`}.YAML()
			r, _ := validate("bootstrap.yaml", cfg)
			Expect(r.ExitCode).To(Equal(1))
			Expect(r.Stderr).To(ContainSubstring("routes[0].request_headers_to_add[0].header.raw_value: "))
		}
	})
})
