package e2e

import (
	"io"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Retry priority", func() {
	It("sends the retry to P1 after P0 failed with previous_priorities, and to P0 again without it", func() {
		p0 := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "p0")
		}), false)
		p1 := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "p1")
		}), false)
		port, dir := freePort(), newDir()
		endpoint := func(addr string, priority int) string {
			return `{priority: ` + strconv.Itoa(priority) + `, lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` +
				strconv.Itoa(portNum(addr)) + `}}}}]}`
		}
		policy := `retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}`
		s := Start(dir, proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /plain/}, route: {cluster: tiers, retry_policy: {` + policy + `}}},
 {match: {prefix: /}, route: {cluster: tiers, retry_policy: {` + policy + `,
  retry_priority: {name: envoy.retry_priorities.previous_priorities, typed_config: {
    "@type": type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig,
    update_frequency: 1}}}}}]`,
			// P0's one host is healthy, so P0 takes all the load: only the
			// retry priority moves a retry to P1.
			Clusters: []proxyCluster{{Name: "tiers", Port: portNum(p0), Extra: `{load_assignment: {cluster_name: tiers, endpoints: [` +
				endpoint(p0, 0) + `, ` + endpoint(p1, 1) + `]}}`}},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		for i := range 5 {
			status, attempts, body := retryGet(c, port, "GET", "/r"+strconv.Itoa(i), "")
			Expect(status).To(Equal(200), "request %d", i)
			Expect(body).To(Equal("p1"))
			Expect(attempts).To(BeEmpty()) // include_attempt_count_in_response is off
		}
		// Without the retry priority, the retry goes to P0 again.
		for i := range 3 {
			status, _, body := retryGet(c, port, "GET", "/plain/r"+strconv.Itoa(i), "")
			Expect(status).To(Equal(503), "request %d", i)
			Expect(body).To(Equal("p0"))
		}
		Expect(statValue(s, "cluster.tiers.upstream_rq_retry")).To(Equal("8"))
		Expect(statValue(s, "cluster.tiers.upstream_rq_retry_success")).To(Equal("5"))
	})
})
