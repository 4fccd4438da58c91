package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The local rate limit filter's wildcard descriptors, local cluster share and Retry-After", func() {
	var up int
	BeforeEach(func() {
		up = portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "up")
		}), false))
	})

	It("gives each value of a wildcard descriptor a bucket, keeps max_dynamic_descriptors of them, and says when to retry", func() {
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: edge}",
			Filters: `[` + httpFilter("envoy.filters.http.local_ratelimit", localRateLimitType, `{
				stat_prefix: wild,
				token_bucket: {max_tokens: 100, tokens_per_fill: 100, fill_interval: 3600s},
				filter_enabled: {default_value: {numerator: 100}},
				filter_enforced: {default_value: {numerator: 100}},
				rate_limits: [{actions: [{request_headers: {header_name: x-user, descriptor_key: user}}]}],
				max_dynamic_descriptors: 2,
				enable_retry_after_header: true,
				descriptors: [{entries: [{key: user}], token_bucket: {max_tokens: 1, tokens_per_fill: 1, fill_interval: 60s}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(user string) Response {
			GinkgoHelper()
			return httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"X-User": {user}})
		}

		Expect(get("ann").Status).To(Equal(200))
		r := get("ann")
		Expect(r.Status).To(Equal(429), "ann's own bucket holds one token")
		retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
		Expect(err).NotTo(HaveOccurred(), "a Retry-After in seconds: %q", r.Header.Get("Retry-After"))
		Expect(retry).To(BeNumerically(">=", 1))
		Expect(retry).To(BeNumerically("<=", 60), "a token comes back every minute")
		Expect(get("bob").Status).To(Equal(200), "bob's bucket is not ann's")
		Expect(get("bob").Status).To(Equal(429))
		// A third value: ann, the least recently used of two kept, is
		// forgotten; bob, limited still, becomes the most recent.
		Expect(get("carl").Status).To(Equal(200))
		Expect(get("bob").Status).To(Equal(429))
		Expect(get("ann").Status).To(Equal(200), "ann was forgotten: a full bucket again")
		Expect(statValue(s, "wild.http_local_rate_limit.rate_limited")).To(Equal("3"))
	})

	It("shares its buckets evenly between the local cluster's hosts with local_cluster_rate_limit", func() {
		port := freePort()
		endpoint := func(p int) string {
			return fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}", p)
		}
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: edge}",
			Top:  "{cluster_manager: {local_cluster_name: mesh}}",
			Filters: `[` + httpFilter("envoy.filters.http.local_ratelimit", localRateLimitType, `{
				stat_prefix: shared,
				token_bucket: {max_tokens: 4, tokens_per_fill: 4, fill_interval: 3600s},
				filter_enabled: {default_value: {numerator: 100}},
				filter_enforced: {default_value: {numerator: 100}},
				local_cluster_rate_limit: {}}`) + `]`,
			Clusters: []proxyCluster{
				{Name: "up", Port: up},
				{Name: "mesh", Extra: "{load_assignment: {cluster_name: mesh, endpoints: [{lb_endpoints: [" + endpoint(freePort()) + ", " + endpoint(freePort()) + "]}]}}"},
			},
		}.YAML())
		Expect(statValue(s, "cluster.mesh.membership_total")).To(Equal("2"))
		client := &http.Client{Timeout: 5 * time.Second}
		codes := []int{}
		for range 3 {
			codes = append(codes, httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Status)
		}
		Expect(codes).To(Equal([]int{200, 200, 429}), "two hosts: half of the 4 tokens are this proxy's")
	})

	It("refuses local_cluster_rate_limit without a local cluster, as Envoy does", func() {
		cfg := proxySpec{
			Port:     freePort(),
			Filters:  `[` + httpFilter("envoy.filters.http.local_ratelimit", localRateLimitType, `{stat_prefix: shared, local_cluster_rate_limit: {}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML()
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("local_cluster_rate_limit: local_cluster_rate_limit is set but no local cluster name is present"))
	})
})
