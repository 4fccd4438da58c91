package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// clustersAdminBootstrap has two clusters whose endpoints are never dialled
// (nothing routes to them), so /clusters is deterministic: "web" with
// weights, localities, a canary, failed and degraded hosts and a second
// priority; "h2" with HTTP/2 options and circuit breakers.
const clustersAdminBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  clusters:
  - name: web
    connect_timeout: 0.5s
    load_assignment:
      cluster_name: web
      endpoints:
      - locality: {region: eu-west, zone: eu-west-1a, sub_zone: rack-1}
        lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 10001}}, hostname: web-1.local}
          load_balancing_weight: 10
          metadata: {filter_metadata: {envoy.lb: {canary: true}}}
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 10002}}}
          load_balancing_weight: 90
          health_status: UNHEALTHY
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 10003}}}
          health_status: DRAINING
      - priority: 1
        locality: {zone: eu-west-1b}
        lb_endpoints:
        - endpoint: {address: {socket_address: {address: "::1", port_value: 10004}}}
          health_status: DEGRADED
  - name: h2
    alt_stat_name: h2_backend
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    circuit_breakers:
      thresholds:
      - {max_connections: 100, max_pending_requests: 200, max_requests: 300, max_retries: 4}
      - {priority: HIGH, max_connections: 5}
    load_assignment:
      cluster_name: h2
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 10005}}}
`

// clusterBackend is a loopback HTTP server answering its name, over
// HTTP/1.1 and h2c.
type clusterBackend struct {
	name string
	port int
}

// startClusterBackend serves until the spec ends.
func startClusterBackend(name string) clusterBackend {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.Proto)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
	return clusterBackend{name: name, port: ln.Addr().(*net.TCPAddr).Port}
}

// closedLoopbackPort is a port on 127.0.0.1 that nothing listens on.
func closedLoopbackPort() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := ln.Addr().(*net.TCPAddr).Port
	Expect(ln.Close()).To(Succeed())
	return port
}

// trafficBootstrap routes every request of a listener on port to the
// cluster "svc"; endpoints are the cluster's lb_endpoints (YAML flow
// items) and options more cluster fields (YAML flow, "" for none).
func trafficBootstrap(port int, options string, endpoints ...string) string {
	if options != "" {
		options += ", "
	}
	return proxySpec{
		Port:     port,
		Listener: "{name: front}",
		HCM:      "{stat_prefix: front}",
		Clusters: []proxyCluster{{Name: "svc",
			Extra: "{" + options + "load_assignment: {endpoints: [{lb_endpoints: [" + strings.Join(endpoints, ", ") + "]}]}}"}},
	}.YAML()
}

// weightedEndpoint is an lb_endpoints item (YAML flow) for a backend.
func weightedEndpoint(port, weight int) string {
	return fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}, load_balancing_weight: %d}", port, weight)
}

// getThrough sends GET / to the listener and returns status and body.
func getThrough(client *http.Client, port int) (int, string) {
	GinkgoHelper()
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

// hostLine returns the value of one per-host key from the /clusters text.
func hostLine(body, cluster, host, key string) string {
	prefix := cluster + "::" + host + "::" + key + "::"
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return "<missing>"
}

var _ = Describe("/clusters", func() {
	It("lists static clusters in text, as Envoy does", func() {
		s := Start(newDir(), clustersAdminBootstrap)
		r := s.Get("/clusters")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Content-Type")).To(Equal("text/plain; charset=UTF-8"))
		expectGolden("clusters.txt", r.Body)
	})

	It("renders the Clusters message with format=json, defaults omitted", func() {
		s := Start(newDir(), clustersAdminBootstrap)
		r := s.Get("/clusters?format=json")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
		expectGolden("clusters.json", r.Body)
	})

	It("shows only the version line without clusters", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		Expect(s.Get("/clusters").Body).To(Equal("version_info::static\n"))
		Expect(s.Get("/clusters?format=json").Body).To(Equal("{}\n"))
	})

	It("publishes the cluster manager and membership stats", func() {
		s := Start(newDir(), clustersAdminBootstrap)
		Expect(statValue(s, "cluster_manager.active_clusters")).To(Equal("2"))
		Expect(statValue(s, "cluster_manager.cluster_added")).To(Equal("2"))
		Expect(statValue(s, "cluster.web.membership_total")).To(Equal("4"))
		Expect(statValue(s, "cluster.web.membership_healthy")).To(Equal("1"))
		Expect(statValue(s, "cluster.web.membership_degraded")).To(Equal("1"))
		Expect(statValue(s, "cluster.h2_backend.membership_total")).To(Equal("1"))
	})
})

var _ = Describe("Static clusters", func() {
	It("spreads requests by weight and reuses upstream connections", func() {
		a, b, c := startClusterBackend("a"), startClusterBackend("b"), startClusterBackend("c")
		port := freePort()
		s := Start(newDir(), trafficBootstrap(port, "",
			weightedEndpoint(a.port, 1), weightedEndpoint(b.port, 2), weightedEndpoint(c.port, 3)))
		client := &http.Client{Timeout: 5 * time.Second}
		counts := map[string]int{}
		for range 60 {
			code, body := getThrough(client, port)
			Expect(code).To(Equal(200), body)
			counts[strings.Fields(body)[0]]++
		}
		// Ten weighted cycles of six picks; the cycle starts at a random
		// point, so a host may gain or lose one pick at the edges.
		Expect(counts["a"]).To(BeNumerically("~", 10, 1))
		Expect(counts["b"]).To(BeNumerically("~", 20, 1))
		Expect(counts["c"]).To(BeNumerically("~", 30, 1))

		body := s.Get("/clusters").Body
		for _, be := range []clusterBackend{a, b, c} {
			host := fmt.Sprintf("127.0.0.1:%d", be.port)
			Expect(hostLine(body, "svc", host, "cx_total")).To(Equal("1"), "one kept-alive connection per host:\n%s", body)
			Expect(hostLine(body, "svc", host, "cx_active")).To(Equal("1"))
			Expect(hostLine(body, "svc", host, "rq_total")).To(Equal(fmt.Sprint(counts[be.name])))
			Expect(hostLine(body, "svc", host, "rq_success")).To(Equal(fmt.Sprint(counts[be.name])))
		}
		Expect(statValue(s, "cluster.svc.upstream_cx_http1_total")).To(Equal("3"))
	})

	It("answers 503 and counts the failure when the upstream refuses", func() {
		closed := closedLoopbackPort()
		port := freePort()
		s := Start(newDir(), trafficBootstrap(port, "", weightedEndpoint(closed, 1)))
		code, _ := getThrough(&http.Client{Timeout: 5 * time.Second}, port)
		Expect(code).To(Equal(503))
		Expect(statValue(s, "cluster.svc.upstream_cx_connect_fail")).To(Equal("1"))
		host := fmt.Sprintf("127.0.0.1:%d", closed)
		Expect(hostLine(s.Get("/clusters").Body, "svc", host, "cx_connect_fail")).To(Equal("1"))
	})

	It("keeps hosts with a failing configured health out of rotation", func() {
		good := startClusterBackend("good")
		bad := startClusterBackend("bad")
		port := freePort()
		s := Start(newDir(), trafficBootstrap(port, "common_lb_config: {healthy_panic_threshold: {value: 0}}",
			weightedEndpoint(good.port, 1),
			fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}, health_status: UNHEALTHY}", bad.port)))
		client := &http.Client{Timeout: 5 * time.Second}
		for range 10 {
			code, body := getThrough(client, port)
			Expect(code).To(Equal(200))
			Expect(body).To(HavePrefix("good "))
		}
		host := fmt.Sprintf("127.0.0.1:%d", bad.port)
		Expect(hostLine(s.Get("/clusters").Body, "svc", host, "health_flags")).To(Equal("/failed_eds_health"))
	})

	It("talks HTTP/2 to the upstream when the cluster says so", func() {
		h2 := startClusterBackend("h2")
		port := freePort()
		s := Start(newDir(), trafficBootstrap(port, "http2_protocol_options: {}", weightedEndpoint(h2.port, 1)))
		client := &http.Client{Timeout: 5 * time.Second}
		for range 3 {
			code, body := getThrough(client, port)
			Expect(code).To(Equal(200))
			Expect(body).To(Equal("h2 HTTP/2.0"))
		}
		Expect(statValue(s, "cluster.svc.upstream_cx_http2_total")).To(Equal("1"))
	})

	It("refuses a weight outside 1 to 100 with the field's path", func() {
		dir := newDir()
		cfg := trafficBootstrap(freePort(), "", weightedEndpoint(10001, 101))
		path := dir + "/bootstrap.yaml"
		writeFile(path, cfg)
		res := Run("-c", path, "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(
			"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].load_balancing_weight: 101 is out of range: a weight is 1 to 100"))
	})
})
