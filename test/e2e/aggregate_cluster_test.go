package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	// The aggregate cluster's config type, for the clusters the
	// management server sends.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// aggregateCluster is an aggregate cluster (YAML flow) failing over across
// the named clusters, in order.
func aggregateCluster(name string, clusters ...string) proxyCluster {
	list := ""
	for i, c := range clusters {
		if i > 0 {
			list += ", "
		}
		list += c
	}
	return proxyCluster{Name: name, Extra: `{load_assignment: null, lb_policy: CLUSTER_PROVIDED, cluster_type: {name: envoy.clusters.aggregate, typed_config: {
  "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig, clusters: [` + list + `]}}}`}
}

// aggGet sends one GET through the listener on a connection of its own
// and returns the status and body.
func aggGet(port int, path string) (int, string) {
	GinkgoHelper()
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(listenerURL(port, path))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

// aggCount sends n requests and counts the answers by body.
func aggCount(port, n int) map[string]int {
	GinkgoHelper()
	got := map[string]int{}
	for range n {
		status, body := aggGet(port, "/")
		Expect(status).To(Equal(200), "body %q", body)
		got[body]++
	}
	return got
}

var _ = Describe("Aggregate cluster", func() {
	const fast = `timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1`

	It("fails over from a cluster whose hosts fail their health checks, splits the load on partial health by the overprovisioning factor, and returns when they recover", func() {
		a1, a2, b := newHCUpstream("a1"), newHCUpstream("a2"), newHCUpstream("b")
		port, dir := freePort(), newDir()
		hc := `, health_checks: [{` + fast + `, http_health_check: {path: /healthz}}]}`
		s := Start(dir, proxySpec{
			Port:   port,
			Routes: `[{match: {prefix: /}, route: {cluster: agg}}]`,
			Clusters: []proxyCluster{
				{Name: "primary", Extra: `{` + hcEndpoints("primary", portNum(a1.addr), portNum(a2.addr)) + hc},
				{Name: "secondary", Extra: `{` + hcEndpoints("secondary", portNum(b.addr)) + hc},
				aggregateCluster("agg", "primary", "secondary"),
			},
		}.YAML())
		s.WaitLive()
		Eventually(func() string { return statValue(s, "cluster.primary.membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("2"))

		got := aggCount(port, 20)
		Expect(got["b"]).To(BeZero(), "all primary hosts healthy: %v", got)
		Expect(got["a1"] + got["a2"]).To(Equal(20))

		// One of two primary hosts healthy: 50% x 1.4 = 70% of the load
		// stays on the primary cluster, 30% fails over. Over 400
		// requests the secondary's share is 120 +- 9 (one standard
		// deviation); 80..160 fails with odds below 1 in 10^4, and
		// excludes an even split (200).
		a1.set("503")
		Eventually(func() string { return statValue(s, "cluster.primary.membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("1"))
		got = aggCount(port, 400)
		Expect(got["a1"]).To(BeZero(), "the unhealthy host took requests: %v", got)
		Expect(got["b"]).To(And(BeNumerically(">=", 80), BeNumerically("<=", 160)), "split %v", got)
		Expect(got["a2"]).To(Equal(400 - got["b"]))
		secondary := got["b"]

		// No primary host healthy: everything to the secondary.
		a2.set("503")
		Eventually(func() string { return statValue(s, "cluster.primary.membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("0"))
		got = aggCount(port, 20)
		Expect(got["b"]).To(Equal(20), "failed over: %v", got)
		secondary += 20

		// Recovered: back to the primary.
		a1.set("ok")
		a2.set("ok")
		Eventually(func() string { return statValue(s, "cluster.primary.membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("2"))
		got = aggCount(port, 20)
		Expect(got["b"]).To(BeZero(), "recovered: %v", got)

		// The route's cluster counts the responses' codes; the clusters
		// whose pools carried the requests count them and their
		// connections. The last response may reach the client before its
		// code is counted.
		Eventually(func() string { return statValue(s, "cluster.agg.upstream_rq_200") }, 10*time.Second, 20*time.Millisecond).Should(Equal("460"))
		Expect(statValue(s, "cluster.agg.upstream_rq_total")).To(Equal("0"))
		Expect(statValue(s, "cluster.primary.upstream_rq_total") + "/" + statValue(s, "cluster.secondary.upstream_rq_total")).To(Equal(strconv.Itoa(460-secondary) + "/" + strconv.Itoa(secondary)))
		Expect(statValue(s, "cluster.agg.upstream_cx_none_healthy")).To(Equal("0"))
		Expect(statValue(s, "cluster.secondary.upstream_cx_total")).NotTo(Equal("0"))
		Expect(statValue(s, "cluster.primary.upstream_cx_total")).NotTo(Equal("0"))
		// /clusters lists the aggregate cluster, without hosts.
		Expect(s.Get("/clusters").Body).To(ContainSubstring("agg::observability_name::agg\n"))
	})

	It("fails over when outlier detection ejects the primary's host, and returns after the ejection", func() {
		bad, good := &failingUpstream{name: "primary"}, &failingUpstream{name: "secondary"}
		bad.fail.Store(503)
		badPort, goodPort := portNum(httpTestUpstream(bad, false)), portNum(httpTestUpstream(good, false))
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:   port,
			Routes: `[{match: {prefix: /}, route: {cluster: agg}}]`,
			Clusters: []proxyCluster{
				{Name: "primary", Port: badPort, Extra: `{outlier_detection: {consecutive_5xx: 2, interval: 0.1s, base_ejection_time: 1s, max_ejection_percent: 100}}`},
				{Name: "secondary", Port: goodPort},
				aggregateCluster("agg", "primary", "secondary"),
			},
		}.YAML())
		s.WaitLive()
		for range 2 {
			status, body := aggGet(port, "/")
			Expect(status).To(Equal(503))
			Expect(body).To(Equal("primary"))
		}
		// The ejection may follow the second answer by a moment.
		Eventually(func() string { return statValue(s, "cluster.primary.outlier_detection.ejections_active") }, 10*time.Second, 20*time.Millisecond).Should(Equal("1"))
		for range 10 {
			status, body := aggGet(port, "/")
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("secondary"))
		}
		// The host heals; once its ejection ends it takes the traffic
		// again.
		bad.fail.Store(0)
		Eventually(func() string {
			_, body := aggGet(port, "/")
			return body
		}, 10*time.Second, 100*time.Millisecond).Should(Equal("primary"))
		Expect(statValue(s, "cluster.primary.outlier_detection.ejections_active")).To(Equal("0"))
	})

	It("retries on the next cluster with previous_priorities", func() {
		bad, good := &failingUpstream{name: "primary"}, &failingUpstream{name: "secondary"}
		bad.fail.Store(503)
		badPort, goodPort := portNum(httpTestUpstream(bad, false)), portNum(httpTestUpstream(good, false))
		port, dir := freePort(), newDir()
		policy := `retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}`
		s := Start(dir, proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /plain/}, route: {cluster: agg, retry_policy: {` + policy + `}}},
 {match: {prefix: /}, route: {cluster: agg, retry_policy: {` + policy + `,
  retry_priority: {name: envoy.retry_priorities.previous_priorities, typed_config: {
    "@type": type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig,
    update_frequency: 1}}}}}]`,
			Clusters: []proxyCluster{
				{Name: "primary", Port: badPort},
				{Name: "secondary", Port: goodPort},
				aggregateCluster("agg", "primary", "secondary"),
			},
		}.YAML())
		s.WaitLive()
		for i := range 4 {
			status, body := aggGet(port, "/r"+strconv.Itoa(i))
			Expect(status).To(Equal(200), "request %d", i)
			Expect(body).To(Equal("secondary"))
		}
		// Without the retry priority the healthy primary keeps all the
		// load, retries included.
		for i := range 2 {
			status, body := aggGet(port, "/plain/r"+strconv.Itoa(i))
			Expect(status).To(Equal(503), "request %d", i)
			Expect(body).To(Equal("primary"))
		}
		// The last outcome may be counted just after its response.
		Eventually(func() string {
			return statValue(s, "cluster.agg.upstream_rq_retry") + "/" + statValue(s, "cluster.agg.upstream_rq_retry_success")
		}, 10*time.Second, 20*time.Millisecond).Should(Equal("6/4"))
		Expect(bad.requests.Load()).To(Equal(int64(8)))
	})

	It("receives request mirrors, through the picked host's cluster", func() {
		primary, main := &failingUpstream{name: "primary"}, &failingUpstream{name: "main"}
		var h2 atomic.Int64
		primaryPort := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 {
				h2.Add(1)
			}
			primary.ServeHTTP(w, r)
		}), true))
		mainPort := portNum(httpTestUpstream(main, false))
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:   port,
			Routes: `[{match: {prefix: /}, route: {cluster: main, request_mirror_policies: [{cluster: agg}]}}]`,
			Clusters: []proxyCluster{
				{Name: "main", Port: mainPort},
				// The mirror's cluster speaks h2c only: the copy must go
				// with the primary cluster's protocol, not the aggregate's.
				{Name: "primary", Port: primaryPort, Extra: `{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {
  "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http2_protocol_options: {}}}}}`},
				aggregateCluster("agg", "primary"),
			},
		}.YAML())
		s.WaitLive()
		for range 3 {
			status, body := aggGet(port, "/")
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("main"))
		}
		Eventually(primary.requests.Load, 10*time.Second, 50*time.Millisecond).Should(Equal(int64(3)))
		Expect(h2.Load()).To(Equal(int64(3)), "the copies went over HTTP/2")
		Eventually(func() string { return statValue(s, "cluster.agg.upstream_rq_200") }, 10*time.Second, 50*time.Millisecond).Should(Equal("3"))
	})

	It("carries tcp_proxy connections to the first cluster with a healthy host", func() {
		first := startTCPServer(bannerEcho("first"))
		second := startTCPServer(bannerEcho("second"))
		port := freePort()
		down := fmt.Sprintf("{name: down, connect_timeout: 1s, load_assignment: {cluster_name: down, endpoints: [{lb_endpoints: [{health_status: UNHEALTHY, endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}", first)
		agg := `{name: agg, lb_policy: CLUSTER_PROVIDED, cluster_type: {name: envoy.clusters.aggregate, typed_config: {"@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig, clusters: [down, up]}}}`
		s := Start(newDir(), tcpBootstrap(port, "cluster: agg", down, tcpCluster("up", second), agg))
		s.WaitLive()
		for range 3 {
			c := dialTCP(port)
			buf := make([]byte, len("second"))
			_, err := io.ReadFull(c, buf)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(buf)).To(Equal("second"))
			Expect(c.Close()).To(Succeed())
		}
		Expect(statValue(s, "cluster.up.upstream_cx_total")).To(Equal("3"))
		Expect(statValue(s, "cluster.down.upstream_cx_total")).To(Equal("0"))
	})

	It("refuses an aggregate cluster that reaches itself", func() {
		r, _ := validate("agg.yaml", proxySpec{
			Port:     freePort(),
			Routes:   `[{match: {prefix: /}, route: {cluster: a}}]`,
			Clusters: []proxyCluster{aggregateCluster("a", "b"), aggregateCluster("b", "a")},
		}.YAML())
		Expect(r.ExitCode).NotTo(BeZero())
		Expect(r.Stderr + r.Stdout).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.clusters: circular reference between aggregate clusters: a -> b -> a"))
	})
})

var _ = Describe("Aggregate cluster over CDS", func() {
	It("takes up a listed cluster cluster discovery adds, lets go of one it removes, and NACKs a cycle", func() {
		primary, secondary := startNamed("primary"), startNamed("secondary")
		m := startManagementServer()
		s := Launch(newDir(), "bootstrap.yaml", cdsBootstrap(m.port))
		s.WaitForAdmin()
		agg := func(name string, clusters string) *clusterv3.Cluster {
			return clusterProto(name, 0, `{load_assignment: null, lb_policy: CLUSTER_PROVIDED, cluster_type: {name: envoy.clusters.aggregate, typed_config: {
  "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig, clusters: [`+clusters+`]}}}`)
		}
		ingress := []*listenerv3.Listener{twoRouteListener("ingress", "svc", "svc")}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		get := func(addr string) string { return httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body }

		// The primary cluster does not exist yet: the secondary serves.
		m.set(xdsSnapshot("v1", ingress, []*clusterv3.Cluster{agg("svc", "primary, secondary"), clusterProto("secondary", secondary, "")}))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(get(addr)).To(Equal("secondary"))

		m.set(xdsSnapshot("v2", ingress, []*clusterv3.Cluster{agg("svc", "primary, secondary"), clusterProto("secondary", secondary, ""), clusterProto("primary", primary, "")}))
		waitStat(s, "cluster_manager.cds.version_text", `"v2"`)
		for range 5 {
			Expect(get(addr)).To(Equal("primary"))
		}

		m.set(xdsSnapshot("v3", ingress, []*clusterv3.Cluster{agg("svc", "primary, secondary"), clusterProto("secondary", secondary, "")}))
		waitStat(s, "cluster_manager.cds.version_text", `"v3"`)
		for range 5 {
			Expect(get(addr)).To(Equal("secondary"))
		}

		// An aggregate listing svc, which svc lists: refused whole.
		m.set(xdsSnapshot("v4", ingress, []*clusterv3.Cluster{agg("svc", "loop, secondary"), agg("loop", "svc"), clusterProto("secondary", secondary, "")}))
		Eventually(func() string {
			for _, r := range m.received() {
				if msg := r.GetErrorDetail().GetMessage(); msg != "" {
					return msg
				}
			}
			return ""
		}, 10*time.Second).Should(MatchRegexp(`circular reference between aggregate clusters: (loop -> svc -> loop|svc -> loop -> svc)`))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v3"`))
		Expect(get(addr)).To(Equal("secondary"), "the v3 clusters keep serving")
	})
})
