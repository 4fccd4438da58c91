package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// compatPeers says where a compatibility configuration's traffic goes on
// the test's machine: the port each listener (in order) binds on loopback,
// and the port of the peer standing in for each cluster's endpoints, whose
// names a test DNS server resolves to 127.0.0.1.
type compatPeers struct {
	listeners []int
	clusters  map[string]int
	dns       *dnsServer
}

// compatConfig reads examples/compat/<file> and adapts it to the machine
// only: listeners bind 127.0.0.1 on the given ports, the admin an
// ephemeral port, endpoints keep their names but take their peer's port,
// and the bootstrap's default DNS resolver (typed_dns_resolver_config, a
// field the files leave unset) is the test's server. Every feature of the
// file stays as written.
func compatConfig(file string, p compatPeers) string {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(compatDir, file))
	Expect(err).NotTo(HaveOccurred())
	js, err := yaml.YAMLToJSON(raw)
	Expect(err).NotTo(HaveOccurred())
	var b map[string]any
	Expect(json.Unmarshal(js, &b)).To(Succeed())

	Expect(b).NotTo(HaveKey("typed_dns_resolver_config"))
	b["typed_dns_resolver_config"] = map[string]any{
		"name": "envoy.network.dns_resolver.cares",
		"typed_config": map[string]any{
			"@type":                "type.googleapis.com/envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
			"resolvers":            []any{map[string]any{"socket_address": map[string]any{"address": "127.0.0.1", "port_value": p.dns.port}}},
			"dns_resolver_options": map[string]any{"no_default_search_domain": true},
		},
	}
	sa := dig(b, "admin", "address", "socket_address")
	sa["address"], sa["port_value"] = "127.0.0.1", 0

	static := dig(b, "static_resources")
	listeners, _ := static["listeners"].([]any)
	Expect(listeners).To(HaveLen(len(p.listeners)), "a port for each listener of %s", file)
	for i, l := range listeners {
		sa := dig(l.(map[string]any), "address", "socket_address")
		sa["address"], sa["port_value"] = "127.0.0.1", p.listeners[i]
	}
	clusters, _ := static["clusters"].([]any)
	for _, c := range clusters {
		c := c.(map[string]any)
		port, ok := p.clusters[c["name"].(string)]
		Expect(ok).To(BeTrue(), "a peer for cluster %v of %s", c["name"], file)
		for _, loc := range dig(c, "load_assignment")["endpoints"].([]any) {
			for _, lbe := range loc.(map[string]any)["lb_endpoints"].([]any) {
				sa := dig(lbe.(map[string]any), "endpoint", "address", "socket_address")
				sa["port_value"] = port
				if name := sa["address"].(string); net.ParseIP(name) == nil {
					p.dns.set(name, "127.0.0.1")
				}
			}
		}
	}
	out, err := json.Marshal(b)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// dig walks down nested objects of a decoded configuration.
func dig(m map[string]any, keys ...string) map[string]any {
	GinkgoHelper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		Expect(ok).To(BeTrue(), "no object at %q", k)
		m = next
	}
	return m
}

// portNum returns the port of a host:port address as a number.
func portNum(addr string) int {
	GinkgoHelper()
	_, p, err := net.SplitHostPort(addr)
	Expect(err).NotTo(HaveOccurred())
	var n int
	_, err = fmt.Sscan(p, &n)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// namedUpstream answers every request with its name, the Host it got and
// the path, so a test sees where a request went and how it arrived.
func namedUpstream(name string) int {
	GinkgoHelper()
	return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s host=%s path=%s", name, r.Host, r.URL.Path)
	}), false))
}

var _ = Describe("Compatibility tier: real-world configurations served", func() {
	It("serves the front-proxy shape: services by name over STRICT_DNS, a LOGICAL_DNS external API with rewrites, a health endpoint, stdout logs", func() {
		dns := startDNSServer()
		port := freePort()
		cfg := compatConfig("front-proxy.yaml", compatPeers{
			listeners: []int{port},
			clusters: map[string]int{
				"service1-envoy": namedUpstream("service1"),
				"service2-envoy": namedUpstream("service2"),
				"external-api":   namedUpstream("external"),
			},
			dns: dns,
		})
		// stdout is flushed every 50 ms rather than every 10 s.
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(path string) (int, string) {
			r := httpDo(client, "GET", listenerURL(port, path), nil, nil)
			return r.Status, r.Body
		}
		status, body := get("/service/1/orders")
		Expect(status).To(Equal(200))
		Expect(body).To(HavePrefix("service1 "))
		_, body = get("/service/1/orders")
		Expect(body).To(HaveSuffix("path=/service/1/orders"))
		_, body = get("/service/2")
		Expect(body).To(HavePrefix("service2 "))
		// host_rewrite_literal and prefix_rewrite "/" in place of "/api",
		// which leaves the following slash: Envoy's documented behaviour.
		_, body = get("/api/users")
		Expect(body).To(Equal("external host=api.example.com path=//users"))
		// The health_check filter answers itself.
		status, _ = get("/healthz")
		Expect(status).To(Equal(200))
		Expect(statValue(s, "cluster.service1-envoy.upstream_rq_total")).To(Equal("2"))
		// Counted once each response is written.
		Eventually(func() string { return statValue(s, "http.ingress_http.downstream_rq_completed") }).Should(Equal("5"))
		// Hosts resolved by name, as /clusters shows them.
		Expect(s.Get("/clusters").Body).To(ContainSubstring("service2-envoy::127.0.0.1:"))
		// Envoy's default access log format on stdout.
		Eventually(s.Stdout, 10*time.Second).Should(ContainSubstring(`"GET /api/users HTTP/1.1" 200 - 0 `))
	})

	It("serves the sidecar-mesh shape: inbound with header faults, Zipkin and gRPC access logs; outbound by name with WebSockets and a terminated CONNECT", func() {
		dns := startDNSServer()
		zipkin := startZipkinCollector()
		als, alsPort := startCollector()
		inventory := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !websocket.IsWebSocketUpgrade(r) {
				fmt.Fprintf(w, "inventory path=%s", r.URL.Path)
				return
			}
			up := websocket.Upgrader{}
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				kind, msg, err := c.ReadMessage()
				if err != nil || c.WriteMessage(kind, append([]byte("inventory: "), msg...)) != nil {
					return
				}
			}
		}), false)
		inv := portNum(inventory)
		in, out := freePort(), freePort()
		cfg := compatConfig("sidecar-mesh.yaml", compatPeers{
			listeners: []int{in, out},
			clusters: map[string]int{
				"local-app": namedUpstream("app"),
				"payments":  namedUpstream("payments"),
				"inventory": inv,
				"egress":    startTCPEcho(false),
				"zipkin":    zipkin.port,
				"als":       alsPort,
			},
			dns: dns,
		})
		// stdout is flushed every 50 ms rather than every 10 s.
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		s.WaitLive()
		client := &http.Client{Timeout: 5 * time.Second}

		// Inbound: the local app, or a fault asked for by header.
		r := httpDo(client, "GET", listenerURL(in, "/orders/7"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(HavePrefix("app "))
		r = httpDo(client, "GET", listenerURL(in, "/orders/8"), nil, http.Header{"X-Envoy-Fault-Abort-Request": {"503"}})
		Expect(r.Status).To(Equal(503))
		Expect(statValue(s, "http.inbound.fault.aborts_injected")).To(Equal("1"))
		// Each inbound request is logged to the access log service and
		// traced to Zipkin under the route's decorator.
		Eventually(als.paths, 10*time.Second).Should(ConsistOf("/orders/7", "/orders/8"))
		Eventually(func() []string {
			var names []string
			for _, sp := range zipkin.received() {
				names = append(names, sp.Name)
			}
			return names
		}, 10*time.Second).Should(ContainElement("orders"))

		// Outbound: services by name.
		r = httpDo(client, "GET", listenerURL(out, "/payments/charge"), nil, nil)
		Expect(r.Body).To(HavePrefix("payments "))
		// The route's metadata_match found the payments version's subset.
		Expect(statValue(s, "cluster.payments.lb_subsets_selected")).To(Equal("1"))
		r = httpDo(client, "GET", listenerURL(out, "/items"), nil, nil)
		Expect(r.Body).To(Equal("inventory path=/items"))
		// A WebSocket to the inventory service.
		ws, resp, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/stream", out), nil)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		defer ws.Close()
		Expect(ws.WriteMessage(websocket.TextMessage, []byte("hi"))).To(Succeed())
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, msg, err := ws.ReadMessage()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(msg)).To(Equal("inventory: hi"))
		// CONNECT, terminated here and carried to the egress gateway.
		c, br, status := rawConnect(out, "db.example.com:443")
		Expect(status).To(Equal("HTTP/1.1 200 OK"))
		echoThrough(c, br, "bytes through the tunnel")
		Expect(strings.TrimSpace(statValue(s, "http.outbound.downstream_cx_upgrades_total"))).To(Equal("2"))
	})

	It("serves the edge-services shape: authorization over gRPC, CORS, gzip, gRPC-Web, a WebSocket route, JSON logs on stdout and tcp_proxy", func() {
		dns := startDNSServer()
		authz, authzPort := startAuthzServer()
		_, otelPort := startOTLPCollector()
		grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		grpcSrv := grpc.NewServer()
		hs := health.NewServer()
		hs.SetServingStatus("shop", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(grpcSrv, hs)
		go func() { _ = grpcSrv.Serve(grpcLis) }()
		DeferCleanup(grpcSrv.Stop)
		page := strings.Repeat("<p>Outrigger serves this page compressed.</p>\n", 40)
		web := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, page)
		}), false))
		httpPort, pgPort := freePort(), freePort()
		cfg := compatConfig("edge-services.yaml", compatPeers{
			listeners: []int{httpPort, pgPort},
			clusters: map[string]int{
				"web":            web,
				"chat":           startWebSocketEcho(),
				"grpc-backend":   portNum(grpcLis.Addr().String()),
				"authz":          authzPort,
				"otel-collector": otelPort,
				"postgres":       startTCPEcho(false),
			},
			dns: dns,
		})
		// stdout is flushed every 50 ms rather than every 10 s.
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		s.WaitLive()
		client := rawClients()["HTTP/1.1"]

		// The web app, authorized with the route's context extension and
		// compressed.
		r := httpDo(client, "GET", listenerURL(httpPort, "/index.html"), nil, http.Header{"Accept-Encoding": {"gzip"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Content-Encoding")).To(Equal("gzip"))
		zr, err := gzip.NewReader(strings.NewReader(r.Body))
		Expect(err).NotTo(HaveOccurred())
		plain, err := io.ReadAll(zr)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(plain)).To(Equal(page))
		Expect(authz.last("/index.html").GetAttributes().GetContextExtensions()).To(HaveKeyWithValue("route", "web"))
		// Denied by the authorization service.
		r = httpDo(client, "GET", listenerURL(httpPort, "/deny/me"), nil, nil)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal(`{"error":"go away"}`))
		// A CORS preflight from an allowed origin is answered here.
		r = httpDo(client, "OPTIONS", listenerURL(httpPort, "/api"), nil, http.Header{
			"Origin": {"https://app.example.com"}, "Access-Control-Request-Method": {"PUT"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("https://app.example.com"))
		Expect(r.Header.Get("Access-Control-Max-Age")).To(Equal("1728000"))
		// gRPC-Web from a browser to the gRPC backend.
		body := grpcWebRequest(&healthpb.HealthCheckRequest{Service: "shop"})
		r = httpDo(client, "POST", listenerURL(httpPort, "/grpc.health.v1.Health/Check"), bytes.NewReader(body),
			http.Header{"Content-Type": {"application/grpc-web+proto"}, "X-Grpc-Web": {"1"}})
		Expect(r.Status).To(Equal(200))
		msgs, trailers := grpcWebFrames([]byte(r.Body))
		Expect(trailers).To(HaveKeyWithValue("grpc-status", "0"))
		Expect(msgs).To(HaveLen(1))
		var hc healthpb.HealthCheckResponse
		Expect(proto.Unmarshal(msgs[0], &hc)).To(Succeed())
		Expect(hc.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING))
		// WebSockets only where the route enables them.
		ws, resp, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/ws/room", httpPort), nil)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		defer ws.Close()
		Expect(ws.WriteMessage(websocket.TextMessage, []byte("hello"))).To(Succeed())
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, msg, err := ws.ReadMessage()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(msg)).To(Equal("echo: hello"))
		_, resp, err = websocket.DefaultDialer.Dial(fmt.Sprintf("ws://127.0.0.1:%d/other", httpPort), nil)
		Expect(err).To(HaveOccurred(), "the upgrade is off outside /ws")
		if resp != nil {
			resp.Body.Close()
		}
		// The database through tcp_proxy.
		db, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", pgPort), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer db.Close()
		_ = db.SetDeadline(time.Now().Add(5 * time.Second))
		echoThrough(db, bufio.NewReader(db), "SELECT 1;")
		// The JSON access log on stdout.
		Eventually(s.Stdout, 10*time.Second).Should(ContainSubstring(`"path":"/index.html"`))
		Eventually(s.Stdout, 10*time.Second).Should(ContainSubstring(`"path":"/deny/me"`))
		var line map[string]any
		for l := range strings.SplitSeq(s.Stdout(), "\n") {
			if strings.Contains(l, `"path":"/deny/me"`) {
				Expect(json.Unmarshal([]byte(l), &line)).To(Succeed(), l)
			}
		}
		Expect(line).To(HaveKeyWithValue("status", BeNumerically("==", 401)))
		Expect(line).To(HaveKeyWithValue("method", "GET"))
	})
})
