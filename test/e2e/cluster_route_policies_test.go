package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// clusterPolicyOptions is the cluster Extra of a cluster with endpoints
// on ports, the HttpProtocolOptions fields opts (HTTP/1.1 explicitly)
// and the more cluster fields extra.
func clusterPolicyOptions(opts, extra string, ports ...int) string {
	var eps []string
	for _, p := range ports {
		eps = append(eps, fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}", p))
	}
	return `{load_assignment: {endpoints: [{lb_endpoints: [` + strings.Join(eps, ", ") + `]}]}, ` +
		`typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: ` +
		withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
			`{explicit_http_config: {http_protocol_options: {}}, `+opts+`}`) + `}` + extra + `}`
}

var _ = Describe("Route policies of a cluster's HTTP protocol options", func() {
	It("retries and mirrors with the cluster's retry_policy and request_mirror_policies, which replace the route's", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		upPort := portNum(httpTestUpstream(up, false))
		shadowed := make(chan string, 16)
		shadowPort := portNum(httpTestUpstream(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			shadowed <- r.Host + " " + r.URL.Path
		}), false))
		routeShadowed := make(chan string, 16)
		routeShadowPort := portNum(httpTestUpstream(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			routeShadowed <- r.URL.Path
		}), false))
		port := freePort()
		// Both routes retry on connect failures only and mirror to
		// route-shadow.
		routes := `[{match: {prefix: /, headers: [{name: x-plain, present_match: true}]}, route: {cluster: plain,
  retry_policy: {retry_on: connect-failure}, request_mirror_policies: [{cluster: route-shadow}]}},
 {match: {prefix: /}, route: {cluster: up, retry_policy: {retry_on: connect-failure},
  request_mirror_policies: [{cluster: route-shadow}]}}]`
		s := Start(newDir(), proxySpec{
			Port:        port,
			Routes:      routes,
			VirtualHost: `{include_attempt_count_in_response: true, include_request_attempt_count: true}`,
			Clusters: []proxyCluster{
				{Name: "up", Extra: clusterPolicyOptions(`retry_policy: {retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.01s}},
  request_mirror_policies: [{cluster: shadow}]`, "", upPort)},
				{Name: "plain", Port: upPort},
				{Name: "shadow", Port: shadowPort},
				{Name: "route-shadow", Port: routeShadowPort},
			},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 10 * time.Second}

		By("the cluster's retry policy retries a 503 the route's (connect-failure) would not")
		status, attempts, body := retryGet(c, port, "GET", "/503/a", "")
		Expect(status).To(Equal(200))
		Expect(attempts).To(Equal("2"))
		Expect(body).To(Equal("attempt=2 body="))
		Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("1"))

		By("the cluster's mirror policy sends the copies, to its shadow only")
		Eventually(shadowed).Should(Receive(Equal(fmt.Sprintf("127.0.0.1-shadow:%d /503/a", port))))

		By("a cluster without options keeps the route's policies")
		req, err := http.NewRequest("GET", listenerURL(port, "/503/b"), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("x-plain", "1")
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(503))
		Expect(resp.Header.Get("x-envoy-attempt-count")).To(Equal("1"))
		Eventually(routeShadowed).Should(Receive(Equal("/503/b")))
		// The route's shadow got that request's copy only, the
		// cluster's none of it.
		Expect(routeShadowed).To(BeEmpty())
		Expect(shadowed).To(BeEmpty())
	})

	It("hashes requests to a ring hash cluster with the cluster's hash_policy", func() {
		var ports []int
		for _, name := range []string{"a", "b"} {
			ports = append(ports, portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("x-upstream", name)
			}), false)))
		}
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Clusters: []proxyCluster{{Name: "up", Extra: clusterPolicyOptions(`hash_policy: [{header: {header_name: x-user}}]`,
				", lb_policy: RING_HASH", ports...)}},
		}.YAML())
		s.WaitLive()
		seen := map[string]bool{}
		for i := range 8 {
			user := fmt.Sprintf("user-%d", i)
			status, first, _ := lbGet(port, "/", "x-user", user)
			Expect(status).To(Equal(200))
			seen[first] = true
			for range 4 {
				_, again, _ := lbGet(port, "/", "x-user", user)
				Expect(again).To(Equal(first), user)
			}
		}
		Expect(seen).To(HaveLen(2))
	})
})
