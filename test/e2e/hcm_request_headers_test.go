package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// headerEchoUpstream answers with the request's Host and headers as JSON.
func headerEchoUpstream() int {
	GinkgoHelper()
	return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := map[string]string{"host": r.Host}
		for k, v := range r.Header {
			out[http.CanonicalHeaderKey(k)] = v[0]
		}
		_ = json.NewEncoder(w).Encode(out)
	}), false))
}

var _ = Describe("Connection manager request headers: add_user_agent, append_x_forwarded_port, strip_trailing_host_dot", func() {
	It("names this proxy to the upstream, says which port the client used, and drops a host's trailing dot", func() {
		up := headerEchoUpstream()
		port := freePort()
		cfg := proxySpec{
			Port:     port,
			Top:      "{node: {id: orders-7d9f, cluster: orders}}",
			HCM:      "{use_remote_address: true, add_user_agent: true, append_x_forwarded_port: true, strip_trailing_host_dot: true}",
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML()
		Start(newDir(), cfg)
		get := func(host string, h http.Header) map[string]string {
			GinkgoHelper()
			req, err := http.NewRequest("GET", listenerURL(port, "/"), nil)
			Expect(err).NotTo(HaveOccurred())
			req.Host = host
			for k, v := range h {
				req.Header[k] = v
			}
			resp, err := (&http.Client{}).Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			var got map[string]string
			Expect(json.NewDecoder(resp.Body).Decode(&got)).To(Succeed())
			return got
		}

		// No user-agent: the service cluster stands in for it.
		got := get("shop.example.com.:8443", http.Header{"User-Agent": {""}, "X-Forwarded-Port": {"1"}, "X-Envoy-Downstream-Service-Cluster": {"spoofed"}})
		Expect(got).To(HaveKeyWithValue("host", "shop.example.com:8443"))
		Expect(got).To(HaveKeyWithValue("X-Envoy-Downstream-Service-Cluster", "orders"))
		Expect(got).To(HaveKeyWithValue("X-Envoy-Downstream-Service-Node", "orders-7d9f"))
		Expect(got).To(HaveKeyWithValue("User-Agent", "orders"))
		Expect(got).To(HaveKeyWithValue("X-Forwarded-Port", fmt.Sprint(port)), "the client's value is not trusted without trusted hops")

		// A client's own user-agent is kept; a host without a dot too.
		got = get("shop.example.com", http.Header{"User-Agent": {"curl/8"}})
		Expect(got).To(HaveKeyWithValue("host", "shop.example.com"))
		Expect(got).To(HaveKeyWithValue("User-Agent", "curl/8"))
	})
})
