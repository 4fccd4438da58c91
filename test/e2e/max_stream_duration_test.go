package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
)

// msdBootstrap is one AUTO listener on port whose connection manager has
// a 2 s max_stream_duration, WebSocket upgrades (HTTP/2 extended CONNECT
// too), a fault filter that delays requests by their
// x-envoy-fault-delay-request, a text access log in dir, and routes to the
// upstreams of msdUpstreams: /slow, /stream, /ws and /wsh2 (an HTTP/2
// upstream that takes WebSockets as extended CONNECTs) under the
// connection manager's duration, /long, /short and /none overriding it
// (4 s, 300 ms, none), /grpc.Svc/ with grpc_timeout_header_max 1 s and
// grpc_timeout_header_offset 100 ms, /grpc.Old/ with the deprecated
// max_grpc_timeout 1 s and grpc_timeout_offset 100 ms, and /capped to a
// cluster whose max_stream_duration is 500 ms.
func msdBootstrap(port int, dir string, ups msdUpstreams) string {
	GinkgoHelper()
	h2 := h2cOptions()
	return proxySpec{
		Port:     port,
		Listener: "{name: msd}",
		HCM: `{stat_prefix: msd, codec_type: AUTO, common_http_protocol_options: {max_stream_duration: 2s},
			upgrade_configs: [{upgrade_type: websocket}], http2_protocol_options: {allow_connect: true},
			access_log: [` + fileLog(filepath.Join(dir, "access.log"), "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + `]}`,
		Routes: `[{match: {prefix: /slow}, route: {cluster: slow}},
			{match: {prefix: /stream}, route: {cluster: slow}},
			{match: {prefix: /long}, route: {cluster: slow, max_stream_duration: {max_stream_duration: 4s}}},
			{match: {prefix: /short}, route: {cluster: slow, max_stream_duration: {max_stream_duration: 0.3s}}},
			{match: {prefix: /none}, route: {cluster: slow, max_stream_duration: {max_stream_duration: 0s}}},
			{match: {prefix: /grpc.Svc/}, route: {cluster: grpc, max_stream_duration: {grpc_timeout_header_max: 1s, grpc_timeout_header_offset: 0.1s}}},
			{match: {prefix: /grpc.Old/}, route: {cluster: grpc, max_grpc_timeout: 1s, grpc_timeout_offset: 0.1s}},
			{match: {prefix: /capped}, route: {cluster: capped}},
			{match: {prefix: /wsh2}, route: {cluster: wsh2}},
			{match: {prefix: /ws}, route: {cluster: ws}}]`,
		Filters: "[" + httpFilter("envoy.filters.http.fault", "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
			"{delay: {header_delay: {}, percentage: {numerator: 100}}}") + "]",
		Clusters: []proxyCluster{
			{Name: "slow", Port: portNum(ups.slow)},
			{Name: "grpc", Port: portNum(ups.grpc), Extra: h2},
			{Name: "capped", Port: portNum(ups.slow), Extra: httpProtocolOptions(
				"{common_http_protocol_options: {max_stream_duration: 0.5s}, explicit_http_config: {http_protocol_options: {}}}")},
			{Name: "ws", Port: portNum(ups.ws)},
			{Name: "wsh2", Port: portNum(ups.wsh2), Extra: h2},
		},
	}.YAML()
}

// msdUpstreams are the upstreams of msdBootstrap.
type msdUpstreams struct{ slow, grpc, ws, wsh2 string }

// msdDelay is how long the upstreams of msdBootstrap wait before they
// answer: the request's x-delay-ms, else 4 s. They stop waiting when the
// request is cancelled, and never wait more than 5 s.
func msdDelay(r *http.Request) time.Duration {
	d := 4 * time.Second
	if v, err := strconv.Atoi(r.Header.Get("x-delay-ms")); err == nil {
		d = time.Duration(v) * time.Millisecond
	}
	return min(d, 5*time.Second)
}

// msdWait waits d, or until the request is cancelled.
func msdWait(r *http.Request, d time.Duration) {
	select {
	case <-time.After(d):
	case <-r.Context().Done():
	}
}

// msdSlowUpstream answers "done" after msdDelay; on /stream it sends a
// first chunk at once, then one every 200 ms for 4 s.
func msdSlowUpstream(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/stream") {
		w.Header().Set("content-type", "text/plain")
		for i := 0; i < 20; i++ {
			if _, err := fmt.Fprintf(w, "chunk %d\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			msdWait(r, 200*time.Millisecond)
			if r.Context().Err() != nil {
				return
			}
		}
		return
	}
	msdWait(r, msdDelay(r))
	_, _ = io.WriteString(w, "done")
}

// grpcTimeouts records the grpc-timeout each gRPC call brought upstream,
// by the call's x-call header.
type grpcTimeouts struct {
	mu   sync.Mutex
	seen map[string]string
}

// get is the grpc-timeout call brought, "<none>" for none.
func (g *grpcTimeouts) get(call string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.seen[call]; ok && v != "" {
		return v
	}
	return "<none>"
}

// handler answers a gRPC call (no message, grpc-status 0 in trailers)
// after msdDelay, recording its grpc-timeout.
func (g *grpcTimeouts) handler(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen[r.Header.Get("x-call")] = r.Header.Get("grpc-timeout")
	g.mu.Unlock()
	msdWait(r, msdDelay(r))
	w.Header().Set("content-type", "application/grpc")
	w.Header().Set("trailer", "grpc-status")
	w.WriteHeader(http.StatusOK)
	w.Header().Set("grpc-status", "0")
}

var _ = Describe("max_stream_duration: connection manager, route and cluster", func() {
	var (
		s       *Sidecar
		port    int
		dir     string
		timeout *grpcTimeouts
	)
	BeforeEach(func() {
		dir = newDir()
		timeout = &grpcTimeouts{seen: map[string]string{}}
		ups := msdUpstreams{
			slow: httpTestUpstream(http.HandlerFunc(msdSlowUpstream), false),
			grpc: httpTestUpstream(http.HandlerFunc(timeout.handler), true),
		}
		ups.ws = fmt.Sprintf("127.0.0.1:%d", startWebSocketEcho())
		h2Port, _ := startH2TunnelServer(true)
		ups.wsh2 = fmt.Sprintf("127.0.0.1:%d", h2Port)
		port = freePort()
		s = Start(dir, msdBootstrap(port, dir, ups), "--file-flush-interval-msec", "20")
		s.WaitLive()
	})
	accessLog := func() string { return readFile(filepath.Join(dir, "access.log")) }
	get := func(c *http.Client, path string, header http.Header) (*http.Response, string, error) {
		GinkgoHelper()
		req, err := http.NewRequest(http.MethodGet, listenerURL(port, path), nil)
		Expect(err).NotTo(HaveOccurred())
		for k, vs := range header {
			req.Header[k] = vs
		}
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}

	for name, client := range httpClients() {
		It("answers a request whose upstream is too slow with 504 downstream duration timeout over "+name, func() {
			t0 := time.Now()
			resp, body, err := get(client, "/slow", nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusGatewayTimeout))
			Expect(body).To(Equal("downstream duration timeout"))
			Expect(time.Since(t0)).To(BeNumerically(">=", 2*time.Second-50*time.Millisecond), "fired early")
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("1"))
			Eventually(accessLog).Should(ContainSubstring("/slow 504 - max_duration_timeout\n"))
		})

		It("answers a request whose body never ends with 408 over "+name, func() {
			pr, pw := io.Pipe()
			DeferCleanup(pw.Close)
			go func() { _, _ = io.WriteString(pw, "partial") }()
			req, err := http.NewRequest(http.MethodPost, listenerURL(port, "/slow"), pr)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("x-delay-ms", "0")
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			Expect(resp.StatusCode).To(Equal(http.StatusRequestTimeout))
			Expect(string(b)).To(Equal("downstream duration timeout"))
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("1"))
		})

		It("resets a response that has started over "+name, func() {
			resp, body, err := get(client, "/stream", nil)
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(err).To(HaveOccurred(), "the response was not cut")
			Expect(body).To(HavePrefix("chunk 0\n"))
			Expect(body).NotTo(ContainSubstring("chunk 19"))
			Eventually(func() string { return statValue(s, "http.msd.downstream_rq_max_duration_reached") }).Should(Equal("1"))
			Eventually(accessLog).Should(ContainSubstring("/stream 200 - max_duration_timeout\n"))
		})

		It("answers a request a filter holds past the duration over "+name, func() {
			resp, body, err := get(client, "/slow", http.Header{"X-Envoy-Fault-Delay-Request": {"5000"}, "X-Delay-Ms": {"0"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusGatewayTimeout))
			Expect(body).To(Equal("downstream duration timeout"))
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("1"))
			Expect(statValue(s, "cluster.slow.upstream_rq_total")).To(Equal("0"), "the request went upstream")
		})

		It("lets a route's max_stream_duration replace the connection manager's over "+name, func() {
			slower := http.Header{"X-Delay-Ms": {"3000"}}
			resp, body, err := get(client, "/long", slower)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK), "the route's 4 s should outlast the connection manager's 2 s")
			Expect(body).To(Equal("done"))
			resp, body, err = get(client, "/none", slower)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK), "the route's 0 should lift the connection manager's 2 s")
			Expect(body).To(Equal("done"))

			resp, body, err = get(client, "/short", http.Header{"X-Delay-Ms": {"1000"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusGatewayTimeout), "the route's 300 ms should end a 1 s answer")
			Expect(body).To(Equal("downstream duration timeout"))
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("1"))
		})

		It("ends an upstream request at the cluster's max_stream_duration over "+name, func() {
			resp, body, err := get(client, "/capped", http.Header{"X-Delay-Ms": {"1000"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusGatewayTimeout))
			Expect(body).To(Equal("upstream max stream duration reached"))
			Expect(statValue(s, "cluster.capped.upstream_rq_max_duration_reached")).To(Equal("1"))
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("0"))
			Eventually(accessLog).Should(ContainSubstring("/capped 504 UMSDR upstream_max_stream_duration_reached\n"))

			resp, body, err = get(client, "/capped", http.Header{"X-Delay-Ms": {"0"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(body).To(Equal("done"))
		})
	}

	It("answers a request head that never ends with 408", func() {
		c := dialRawClient(port)
		c.send("GET /slow HTTP/1.1\r\nHost: h\r\n")
		resp, body := c.response()
		Expect(resp.StatusCode).To(Equal(http.StatusRequestTimeout))
		Expect(body).To(Equal("downstream duration timeout"))
		Expect(resp.Close).To(BeTrue())
		Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("1"))
		Expect(statValue(s, "http.msd.downstream_rq_header_timeout")).To(Equal("0"))
	})

	Describe("gRPC", func() {
		h2c := httpClients()["HTTP/2"]
		callPath := func(path, name, grpcTimeout, delayMs string) *http.Response {
			GinkgoHelper()
			req, err := http.NewRequest(http.MethodPost, listenerURL(port, path), strings.NewReader(""))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("content-type", "application/grpc")
			req.Header.Set("te", "trailers")
			req.Header.Set("x-call", name)
			req.Header.Set("x-delay-ms", delayMs)
			if grpcTimeout != "" {
				req.Header.Set("grpc-timeout", grpcTimeout)
			}
			resp, err := h2c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			_, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			return resp
		}
		call := func(name, grpcTimeout, delayMs string) *http.Response {
			GinkgoHelper()
			return callPath("/grpc.Svc/Call", name, grpcTimeout, delayMs)
		}

		It("takes the duration from grpc-timeout, capped and less the offset, and says it upstream", func() {
			resp := call("capped", "5S", "3000")
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Header.Get("grpc-status")).To(Equal("4"), "a trailers-only DEADLINE_EXCEEDED")
			Expect(resp.Header.Get("grpc-message")).To(Equal("downstream duration timeout"))
			Expect(resp.Header.Get("content-type")).To(Equal("application/grpc"))
			Expect(timeout.get("capped")).To(Equal("900m"))
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("1"))

			resp = call("short", "300m", "0")
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Trailer.Get("grpc-status")).To(Equal("0"))
			Expect(timeout.get("short")).To(Equal("200m"))

			// Without grpc-timeout, the connection manager's 2 s is the
			// duration, and the upstream is told so.
			resp = call("none", "", "0")
			Expect(resp.Trailer.Get("grpc-status")).To(Equal("0"))
			Expect(timeout.get("none")).To(Equal("2000m"))
			// A bad grpc-timeout is no timeout from the header.
			resp = call("bad", "1x", "0")
			Expect(resp.Trailer.Get("grpc-status")).To(Equal("0"))
			Expect(timeout.get("bad")).To(Equal("2000m"))
		})

		It("makes grpc-timeout the route timeout with the deprecated max_grpc_timeout", func() {
			resp := callPath("/grpc.Old/Call", "late", "5S", "3000")
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Header.Get("grpc-status")).To(Equal("14"), "the route timeout's 504 as UNAVAILABLE")
			Expect(resp.Header.Get("grpc-message")).To(Equal("upstream request timeout"))
			Expect(timeout.get("late")).To(Equal("1000m"), "5 s less 100 ms, capped at 1 s")
			Expect(statValue(s, "cluster.grpc.upstream_rq_timeout")).To(Equal("1"))

			resp = callPath("/grpc.Old/Call", "early", "500m", "0")
			Expect(resp.Trailer.Get("grpc-status")).To(Equal("0"))
			Expect(timeout.get("early")).To(Equal("400m"))
			resp = callPath("/grpc.Old/Call", "none", "", "0")
			Expect(resp.Trailer.Get("grpc-status")).To(Equal("0"))
			Expect(timeout.get("none")).To(Equal("1000m"), "no grpc-timeout is infinite, capped at 1 s")
			Expect(statValue(s, "http.msd.downstream_rq_max_duration_reached")).To(Equal("0"))
		})
	})

	for _, path := range []string{"/ws", "/wsh2"} {
		It("cuts a WebSocket at the connection manager's max_stream_duration, upstream "+path, func() {
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d%s", port, path), nil)
			Expect(err).NotTo(HaveOccurred())
			defer c.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusSwitchingProtocols))
			Expect(c.WriteMessage(websocket.TextMessage, []byte("hello"))).To(Succeed())
			Expect(c.SetReadDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
			_, got, err := c.ReadMessage()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal("echo: hello"))
			// Nothing more comes: the tunnel ends at 2 s.
			_, _, err = c.ReadMessage()
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).NotTo(ContainSubstring("timeout"), "the tunnel was not cut")
			Eventually(func() string { return statValue(s, "http.msd.downstream_rq_max_duration_reached") }).Should(Equal("1"))
			Eventually(accessLog).Should(ContainSubstring(path + " 101 - max_duration_timeout\n"))
		})
	}

	It("cuts a WebSocket over HTTP/2 extended CONNECT at the duration, with RST_STREAM", func() {
		c := dialH2WebSocket(port, "/ws")
		Expect(c.status).To(Equal("200"))
		c.send(0x1, []byte("hello"))
		_, got := c.receive()
		Expect(got).To(Equal("echo: hello"))
		var reset *http2.RSTStreamFrame
		for i := 0; reset == nil; i++ {
			Expect(i).To(BeNumerically("<", 100), "the stream was not reset")
			f, err := c.fr.ReadFrame()
			Expect(err).NotTo(HaveOccurred(), "the stream was not reset")
			if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == 1 {
				reset = r
			}
		}
		Eventually(func() string { return statValue(s, "http.msd.downstream_rq_max_duration_reached") }).Should(Equal("1"))
		Eventually(accessLog).Should(ContainSubstring("/ws 200 - max_duration_timeout\n"))
	})
})
