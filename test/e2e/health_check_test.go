package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// hcUpstream is an HTTP upstream whose /healthz answer is set on cue:
// "ok", "503", "degraded" (200 with x-envoy-degraded), "immediate" (503
// with x-envoy-immediate-health-check-fail) or "hang" (no answer for
// 3 s). Other paths answer 200 with the upstream's name, with
// x-envoy-immediate-health-check-fail in mode "passive" (whose checks
// pass).
type hcUpstream struct {
	name string
	mode atomic.Value
	addr string
}

func newHCUpstream(name string) *hcUpstream {
	GinkgoHelper()
	u := &hcUpstream{name: name}
	u.mode.Store("ok")
	u.addr = httpTestUpstream(u, false)
	return u
}

func (u *hcUpstream) set(mode string) { u.mode.Store(mode) }

func (u *hcUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		if u.mode.Load() == "passive" {
			w.Header().Set("x-envoy-immediate-health-check-fail", "true")
		}
		_, _ = io.WriteString(w, u.name)
		return
	}
	switch u.mode.Load().(string) {
	case "503":
		w.WriteHeader(http.StatusServiceUnavailable)
	case "degraded":
		w.Header().Set("x-envoy-degraded", "1")
	case "immediate":
		w.Header().Set("x-envoy-immediate-health-check-fail", "true")
		w.WriteHeader(http.StatusServiceUnavailable)
	case "hang":
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}
}

// hcEndpoints is a load_assignment (YAML flow) of cluster name with an
// endpoint per port on 127.0.0.1.
func hcEndpoints(name string, ports ...int) string {
	var eps []string
	for _, p := range ports {
		eps = append(eps, `{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: `+strconv.Itoa(p)+`}}}}`)
	}
	return `load_assignment: {cluster_name: ` + name + `, endpoints: [{lb_endpoints: [` + strings.Join(eps, ", ") + `]}]}`
}

// clusterHostFlags reads a host's health_flags from /clusters.
func clusterHostFlags(s *Sidecar, cluster, addr string) string {
	GinkgoHelper()
	prefix := cluster + "::" + addr + "::health_flags::"
	for line := range strings.SplitSeq(s.Get("/clusters").Body, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}

// hcEvents reads the health check event log as JSON objects.
func hcEvents(path string) []map[string]any {
	GinkgoHelper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(readFile(path)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		Expect(json.Unmarshal([]byte(line), &m)).To(Succeed(), "event line %q", line)
		out = append(out, m)
	}
	return out
}

// hcEventOf finds the last event of kind about the host on port.
func hcEventOf(events []map[string]any, kind string, port int) map[string]any {
	var found map[string]any
	for _, e := range events {
		ev, ok := e[kind].(map[string]any)
		if !ok {
			continue
		}
		sa, _ := e["host"].(map[string]any)["socket_address"].(map[string]any)
		if sa["port_value"] == float64(port) {
			found = ev
		}
	}
	return found
}

var _ = Describe("Active health checking", func() {
	const fast = `timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 2, healthy_threshold: 2`

	It("takes a host failing its HTTP checks out of load balancing and brings it back when it heals", func() {
		a, b := newHCUpstream("a"), newHCUpstream("b")
		b.set("503") // fails from the start: its first check fails it at once
		port, dir := freePort(), newDir()
		events := filepath.Join(dir, "hc.log")
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(a.addr),
			Extra: `{` + hcEndpoints("web", portNum(a.addr), portNum(b.addr)) + `, health_checks: [{` + fast +
				`, event_log_path: ` + events + `, http_health_check: {path: /healthz}}]}`}}}.YAML())
		s.WaitLive()
		// The cluster warmed after the first round: b is already failed.
		Expect(clusterHostFlags(s, "web", b.addr)).To(Equal("/failed_active_hc"))
		Expect(clusterHostFlags(s, "web", a.addr)).To(Equal("healthy"))
		Expect(statValue(s, "cluster.web.health_check.healthy")).To(Equal("1"))
		Expect(statValue(s, "cluster.web.membership_healthy")).To(Equal("1"))
		Expect(servedBy(port, 10, "/work")).To(Equal(map[string]int{"a": 10}))
		ev := hcEvents(events)
		Expect(hcEventOf(ev, "add_healthy_event", portNum(a.addr))).To(HaveKeyWithValue("first_check", true))
		Expect(hcEventOf(ev, "health_check_failure_event", portNum(b.addr))).To(And(
			HaveKeyWithValue("first_check", true), HaveKeyWithValue("failure_type", "ACTIVE"),
			HaveKeyWithValue("http_status_code", float64(503))))
		Expect(ev[0]).To(And(HaveKeyWithValue("cluster_name", "web"), HaveKeyWithValue("health_checker_type", "HTTP"), HaveKey("timestamp")))

		// Healed, b is back after healthy_threshold passes and takes
		// traffic again.
		b.set("ok")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
		Eventually(func() map[string]int { return servedBy(port, 10, "/work") }, 10*time.Second).Should(HaveKey("b"))
		Expect(hcEventOf(hcEvents(events), "add_healthy_event", portNum(b.addr))).To(HaveKeyWithValue("first_check", false))

		// An answer off the expected statuses ejects it (failure_type
		// ACTIVE, with the status), and traffic leaves it.
		b.set("503")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc"))
		Expect(hcEventOf(hcEvents(events), "eject_unhealthy_event", portNum(b.addr))).To(And(
			HaveKeyWithValue("failure_type", "ACTIVE"), HaveKeyWithValue("http_status_code", float64(503))))
		Eventually(func() map[string]int { return servedBy(port, 10, "/work") }, 5*time.Second).Should(Equal(map[string]int{"a": 10}))
		Expect(strconv.Atoi(statValue(s, "cluster.web.health_check.failure"))).To(BeNumerically(">=", 2))
		Expect(strconv.Atoi(statValue(s, "cluster.web.health_check.attempt"))).To(BeNumerically(">=", 4))
		Expect(strconv.Atoi(statValue(s, "cluster.web.health_check.success"))).To(BeNumerically(">=", 2))

		// The endpoint dump shows the hosts' health now.
		dump := s.Get("/config_dump?include_eds").Body
		Expect(dump).To(ContainSubstring(`"health_status": "UNHEALTHY"`))
		Expect(dump).To(ContainSubstring(`"health_status": "HEALTHY"`))

		// x-envoy-immediate-health-check-fail also excludes it.
		b.set("ok")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
		b.set("immediate")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).
			Should(Equal("/failed_active_hc/excluded_via_immediate_hc_fail"))
	})

	It("marks a host answering x-envoy-degraded degraded and sends it traffic only when the healthy hosts cannot take it", func() {
		// Three healthy hosts of four carry the whole load (the
		// overprovisioning factor 1.4 makes 3/4 more than enough).
		a, b, c, d := newHCUpstream("a"), newHCUpstream("b"), newHCUpstream("a"), newHCUpstream("a")
		port, dir := freePort(), newDir()
		// The events go to event_log_path and to the event_logger's file
		// sink alike.
		events, sunk := filepath.Join(dir, "hc.log"), filepath.Join(dir, "sink.log")
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(a.addr),
			Extra: `{` + hcEndpoints("web", portNum(a.addr), portNum(b.addr), portNum(c.addr), portNum(d.addr)) + `, health_checks: [{` + fast +
				`, event_log_path: ` + events + `, http_health_check: {path: /healthz},
				event_logger: [{name: envoy.health_check.event_sink.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.health_check.event_sinks.file.v3.HealthCheckEventFileSink, event_log_path: ` + sunk + `}}]}]}`}}}.YAML())
		s.WaitLive()
		b.set("degraded")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/degraded_active_hc"))
		Expect(statValue(s, "cluster.web.health_check.degraded")).To(Equal("1"))
		// The membership gauges follow the host's flags once the host set
		// is rebuilt: a moment after /clusters shows the flag.
		Eventually(func() string { return statValue(s, "cluster.web.membership_degraded") }, 5*time.Second).Should(Equal("1"))
		Eventually(func() map[string]int { return servedBy(port, 20, "/work") }, 5*time.Second).Should(Equal(map[string]int{"a": 20}))
		Expect(hcEventOf(hcEvents(events), "degraded_healthy_host", portNum(b.addr))).NotTo(BeNil())
		b.set("ok")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
		Expect(hcEventOf(hcEvents(events), "no_longer_degraded_host", portNum(b.addr))).NotTo(BeNil())
		Expect(hcEventOf(hcEvents(sunk), "degraded_healthy_host", portNum(b.addr))).NotTo(BeNil())
		Expect(hcEventOf(hcEvents(sunk), "no_longer_degraded_host", portNum(b.addr))).NotTo(BeNil())
		Expect(statValue(s, "cluster.web.health_check.degraded")).To(Equal("0"))
	})

	It("fails a host at once when it answers traffic with x-envoy-immediate-health-check-fail", func() {
		a, b := newHCUpstream("a"), newHCUpstream("b")
		port, dir := freePort(), newDir()
		events := filepath.Join(dir, "hc.log")
		// Checks every 10 s: only traffic can fail b in this spec.
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(a.addr),
			Extra: `{` + hcEndpoints("web", portNum(a.addr), portNum(b.addr)) +
				`, health_checks: [{timeout: 1s, interval: 10s, no_traffic_interval: 10s, unhealthy_threshold: 3, healthy_threshold: 1, event_log_path: ` + events + `, http_health_check: {path: /healthz}}]}`}}}.YAML())
		s.WaitLive()
		b.set("passive")
		Expect(servedBy(port, 4, "/work")).To(HaveKey("b")) // round robin reaches b, which answers with the header
		// The proxy hands the header to the checker once the answer is
		// relayed.
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 5*time.Second, 20*time.Millisecond).
			Should(Equal("/failed_active_hc/excluded_via_immediate_hc_fail"))
		Expect(statValue(s, "cluster.web.health_check.passive_failure")).To(Equal("1"))
		Eventually(func() string { return statValue(s, "cluster.web.membership_excluded") }, 5*time.Second, 20*time.Millisecond).Should(Equal("1"))
		Eventually(func() map[string]int { return servedBy(port, 6, "/work") }, 5*time.Second).Should(Equal(map[string]int{"a": 6}))
		Expect(hcEventOf(hcEvents(events), "eject_unhealthy_event", portNum(b.addr))).To(HaveKeyWithValue("failure_type", "PASSIVE"))
	})

	It("times out a check that hangs and marks the host /active_hc_timeout", func() {
		a, b := newHCUpstream("a"), newHCUpstream("b")
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(a.addr),
			Extra: `{` + hcEndpoints("web", portNum(a.addr), portNum(b.addr)) +
				`, health_checks: [{timeout: 0.2s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 2, healthy_threshold: 1, http_health_check: {path: /healthz}}]}`}}}.YAML())
		s.WaitLive()
		Expect(clusterHostFlags(s, "web", b.addr)).To(Equal("healthy"))
		b.set("hang")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc/active_hc_timeout"))
		Expect(strconv.Atoi(statValue(s, "cluster.web.health_check.network_failure"))).To(BeNumerically(">=", 2))
		Eventually(func() map[string]int { return servedBy(port, 5, "/work") }, 5*time.Second).Should(Equal(map[string]int{"a": 5}))
		b.set("ok")
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
	})

	It("fails a host whose connection is refused", func() {
		a := newHCUpstream("a")
		gone := freePort() // nothing listens there
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(a.addr),
			Extra: `{` + hcEndpoints("web", portNum(a.addr), gone) + `, health_checks: [{` + fast + `, http_health_check: {path: /healthz}}]}`}}}.YAML())
		s.WaitLive()
		Expect(clusterHostFlags(s, "web", "127.0.0.1:"+strconv.Itoa(gone))).To(Equal("/failed_active_hc"))
		Expect(servedBy(port, 5, "/work")).To(Equal(map[string]int{"a": 5}))
		Expect(strconv.Atoi(statValue(s, "cluster.web.health_check.network_failure"))).To(BeNumerically(">=", 1))
	})

	It("follows an endpoint's health_check_config: another port and Host, or no checks at all", func() {
		a, b, c := newHCUpstream("a"), newHCUpstream("b"), newHCUpstream("c")
		for _, u := range []*hcUpstream{a, b, c} {
			u.set("503") // their own /healthz fails
		}
		var hosts sync.Map
		checks := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hosts.Store(r.Host, true)
		}), false)
		ep := func(u *hcUpstream, hc string) string {
			return `{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(portNum(u.addr)) + `}}` + hc + `}}`
		}
		port := freePort()
		s := Start(newDir(), proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(a.addr),
			Extra: `{load_assignment: {cluster_name: web, endpoints: [{lb_endpoints: [` +
				ep(a, `, health_check_config: {port_value: `+strconv.Itoa(portNum(checks))+`, hostname: per-host.example}`) + `, ` +
				ep(b, ``) + `, ` +
				ep(c, `, health_check_config: {disable_active_health_check: true}`) +
				`]}]}, health_checks: [{` + fast + `, http_health_check: {path: /healthz, host: cluster-level.example}}]}`}}}.YAML())
		s.WaitLive()
		Eventually(func() string { return clusterHostFlags(s, "web", b.addr) }).Should(Equal("/failed_active_hc"))
		Expect(clusterHostFlags(s, "web", a.addr)).To(Equal("healthy"))
		Expect(clusterHostFlags(s, "web", c.addr)).To(Equal("healthy"))
		Expect(servedBy(port, 20, "/work")).To(SatisfyAll(HaveKey("a"), HaveKey("c"), Not(HaveKey("b"))))
		_, sawEndpointHost := hosts.Load("per-host.example")
		Expect(sawEndpointHost).To(BeTrue(), "the checks of a carry its health_check_config hostname")
		_, sawClusterHost := hosts.Load("cluster-level.example")
		Expect(sawClusterHost).To(BeFalse(), "only a is checked at the check server")
	})

	It("checks TCP hosts with send and receive payloads", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		var reply atomic.Value
		reply.Store("pong")
		// The upstream goes away whole: listener and connections.
		var conns []net.Conn
		var connsMu sync.Mutex
		down := func() {
			_ = ln.Close()
			connsMu.Lock()
			defer connsMu.Unlock()
			for _, c := range conns {
				_ = c.Close()
			}
		}
		DeferCleanup(down)
		go func() {
			defer GinkgoRecover()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				connsMu.Lock()
				conns = append(conns, c)
				connsMu.Unlock()
				go func() {
					defer c.Close()
					buf := make([]byte, 64)
					for {
						_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
						n, err := c.Read(buf)
						if err != nil {
							return
						}
						if string(buf[:n]) == "ping" {
							_, _ = io.WriteString(c, reply.Load().(string))
						}
					}
				}()
			}
		}()
		up := newHCUpstream("a") // the route needs a first cluster
		port, dir := freePort(), newDir()
		tcpPort := portNum(ln.Addr().String())
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{
			{Name: "web", Port: portNum(up.addr)},
			{Name: "tcp", Port: tcpPort, Extra: `{health_checks: [{timeout: 0.3s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1,
				tcp_health_check: {send: {text: "70696e67"}, receive: [{binary: "cG9uZw=="}]}}]}`},
		}}.YAML())
		s.WaitLive()
		addr := ln.Addr().String()
		Expect(clusterHostFlags(s, "tcp", addr)).To(Equal("healthy"))
		// A reply that does not match waits for the right bytes until the
		// timeout.
		reply.Store("pang")
		Eventually(func() string { return clusterHostFlags(s, "tcp", addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc/active_hc_timeout"))
		reply.Store("pong")
		Eventually(func() string { return clusterHostFlags(s, "tcp", addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
		down()
		Eventually(func() string { return clusterHostFlags(s, "tcp", addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc"))
	})

	It("checks gRPC hosts with grpc.health.v1, sending initial_metadata, and follows SERVING", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		var seen atomic.Value
		srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			seen.Store(strings.Join(md.Get("x-check"), ",") + "|" + strings.Join(md.Get("x-cluster"), ","))
			return h(ctx, req)
		}))
		hs := health.NewServer()
		healthpb.RegisterHealthServer(srv, hs)
		hs.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)
		up := newHCUpstream("a")
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{
			{Name: "web", Port: portNum(up.addr)},
			{Name: "grpc", Port: portNum(ln.Addr().String()), Extra: `{` + strings.TrimSuffix(strings.TrimPrefix(h2cOptions(), "{"), "}") +
				`, health_checks: [{timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {service_name: orders, initial_metadata: [
				  {header: {key: x-check, value: outrigger}}, {header: {key: x-cluster, value: "%UPSTREAM_CLUSTER%"}}]}}]}`},
		}}.YAML())
		s.WaitLive()
		addr := ln.Addr().String()
		Expect(clusterHostFlags(s, "grpc", addr)).To(Equal("healthy"))
		Expect(seen.Load()).To(Equal("outrigger|grpc"))
		hs.SetServingStatus("orders", healthpb.HealthCheckResponse_NOT_SERVING)
		Eventually(func() string { return clusterHostFlags(s, "grpc", addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc"))
		hs.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
		Eventually(func() string { return clusterHostFlags(s, "grpc", addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("healthy"))
	})

	It("checks TLS hosts through the cluster's TLS, over HTTP/1.1 and HTTP/2 by ALPN", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		Expect(os.MkdirAll(filepath.Join(dir, "other"), 0o700)).To(Succeed())
		other := newTLSFiles(filepath.Join(dir, "other"))
		up := startTLSUpstream(f, false)
		trust := func(ca string) string {
			return upstreamTLS(`, sni: a.example.com, common_tls_context: {validation_context: {trusted_ca: {filename: ` + ca + `}}}`)
		}
		// The upstream answers with the protocol it saw: the receive
		// payload proves which one the check spoke.
		check := func(codec, proto string) string {
			return `, health_checks: [{timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1,
				http_health_check: {path: /healthz, codec_client_type: ` + codec + `, receive: [{binary: "` + base64.StdEncoding.EncodeToString([]byte(proto)) + `"}]}}]`
		}
		port := freePort()
		chain := `{filters: [` + routingHCM("-", "h1", "h2", "untrusted") + `]}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("h1", up, trust(f.ca), check("HTTP1", "alpn=http/1.1 proto=HTTP/1.1")),
			tlsCluster("h2", up, trust(f.ca), ", "+unwrapFlow(h2cOptions())+check("HTTP2", "alpn=h2 proto=HTTP/2.0")),
			tlsCluster("untrusted", up, trust(other.ca), check("HTTP1", "alpn")),
		))
		s.WaitLive()
		addr := "127.0.0.1:" + strconv.Itoa(up)
		Expect(clusterHostFlags(s, "h1", addr)).To(Equal("healthy"))
		Expect(clusterHostFlags(s, "h2", addr)).To(Equal("healthy"))
		// A server certificate the cluster does not trust fails the check.
		Expect(clusterHostFlags(s, "untrusted", addr)).To(Equal("/failed_active_hc"))
		Expect(strconv.Atoi(statValue(s, "cluster.untrusted.health_check.network_failure"))).To(BeNumerically(">=", 1))
		// Checks are not traffic.
		Expect(statValue(s, "cluster.h1.upstream_cx_total")).To(Equal("0"))
	})

	DescribeTable("refuses nonsense with the field's path",
		func(check, want string) {
			cfg := proxySpec{Port: freePort(), Clusters: []proxyCluster{{Name: "web", Port: freePort(),
				Extra: `{health_checks: [` + check + `]}`}}}.YAML()
			r, _ := validate("hc.yaml", cfg)
			Expect(r.ExitCode).NotTo(Equal(0))
			Expect(r.Stderr + r.Stdout).To(ContainSubstring(want))
		},
		Entry("zero interval", `{timeout: 1s, interval: 0s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {}}`,
			"static_resources.clusters[0].health_checks[0].interval"),
		Entry("no timeout", `{interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {}}`,
			"static_resources.clusters[0].health_checks[0].timeout"),
		Entry("no unhealthy_threshold", `{timeout: 1s, interval: 1s, healthy_threshold: 1, tcp_health_check: {}}`,
			"static_resources.clusters[0].health_checks[0].unhealthy_threshold"),
		Entry("a zero healthy_threshold", `{timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 0, tcp_health_check: {}}`,
			"static_resources.clusters[0].health_checks[0].healthy_threshold: must be at least 1"),
		Entry("an event sink file whose directory does not exist", `{timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {},
			event_logger: [{name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.health_check.event_sinks.file.v3.HealthCheckEventFileSink, event_log_path: /nonexistent-dir/x.log}}]}`,
			"static_resources.clusters[0].health_checks[0].event_logger[0].typed_config.event_log_path: \"/nonexistent-dir/x.log\": its directory does not exist"),
		Entry("gRPC on an HTTP/1.1 cluster", `{timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {}}`,
			"static_resources.clusters[0].health_checks[0].grpc_health_check: web cluster must support HTTP/2 for gRPC healthchecking"),
		Entry("an unimplemented field", `{timeout: 1s, interval: 1s, unhealthy_threshold: 1, healthy_threshold: 1, tcp_health_check: {}, event_service: {envoy_grpc: {cluster_name: web}}}`,
			"static_resources.clusters[0].health_checks[0].event_service"),
	)
})
