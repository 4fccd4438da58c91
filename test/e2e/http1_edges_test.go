package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The timing tolerance of these specs. The sidecar fires the idle,
// request headers, request and max_connection_duration timeouts at their
// setting, and the stream idle timeout (kept lazily) at most 5% early;
// what a client sees on a loaded 2-core machine is later by the
// scheduling of two processes. Settings of 1 to 1.5 s keep the suite fast.
const (
	edgeLate  = 500 * time.Millisecond
	edgeEarly = 50 * time.Millisecond // 5% of the 1 s stream idle timeout
	// edgeClientLag is how much earlier than the client notices it a
	// timer may start in the sidecar: when it counts from a response the
	// sidecar flushed and the client then had to read.
	edgeClientLag = 150 * time.Millisecond
)

// edgeBootstrap is one AUTO listener "edge" on port with hcm added to its
// connection manager and rcExtra to its route configuration (each YAML
// flow mapping content, without the braces), a text access log in dir,
// and four routes: /d answers directly, /x goes to cluster "sink" (an
// upstream that reads request bodies and never answers), /slow to cluster
// "slow" (an upstream that answers after 2 s) and /nc to cluster "absent",
// which is not configured (so validate_clusters decides).
func edgeBootstrap(port int, dir string, ups edgeUpstreams, hcm, rcExtra string) string {
	return edgeSpec(port, dir, ups, hcm, rcExtra).YAML()
}

// edgeSpec is edgeBootstrap's proxySpec.
func edgeSpec(port int, dir string, ups edgeUpstreams, hcm, rcExtra string) proxySpec {
	GinkgoHelper()
	if hcm != "" {
		hcm = ", " + hcm
	}
	return proxySpec{
		Port:     port,
		Listener: "{name: edge}",
		HCM: `{stat_prefix: edge, codec_type: AUTO, route_config: {` + rcExtra + `},
			access_log: [` + fileLog(filepath.Join(dir, "access.log"), "%REQ(:METHOD)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + `]` + hcm + `}`,
		Routes: `[{match: {prefix: /d}, direct_response: {status: 200, body: {inline_string: "hi\n"}}},
			{match: {prefix: /x}, route: {cluster: sink}},
			{match: {prefix: /slow}, route: {cluster: slow}},
			{match: {prefix: /nc}, route: {cluster: absent}}]`,
		Clusters: []proxyCluster{{Name: "sink", Port: portNum(ups.sink)}, {Name: "slow", Port: portNum(ups.slow)}},
	}
}

// edgeUpstreams are the upstreams of edgeBootstrap.
type edgeUpstreams struct{ sink, slow string }

// sinkUpstream reads whatever its clients send and never answers.
func sinkUpstream() string {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ln.Close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The sidecar's end closes it.
			go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// rawClient is a downstream TCP connection driven byte by byte.
type rawClient struct {
	c net.Conn
	r *bufio.Reader
}

// dialRawClient connects to the listener on port; every read and write is
// bounded by 10 s, far above any timeout these specs configure.
func dialRawClient(port int) *rawClient {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	return &rawClient{c: c, r: bufio.NewReader(c)}
}

func (rc *rawClient) send(s string) {
	GinkgoHelper()
	_, err := io.WriteString(rc.c, s)
	Expect(err).NotTo(HaveOccurred())
}

// response reads one response and its body.
func (rc *rawClient) response() (*http.Response, string) {
	GinkgoHelper()
	resp, err := http.ReadResponse(rc.r, &http.Request{Method: http.MethodGet})
	Expect(err).NotTo(HaveOccurred())
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp, string(b)
}

// closedAfter waits until the sidecar closes the connection and returns
// how long after from that was; it fails if the sidecar sends anything.
func (rc *rawClient) closedAfter(from time.Time) time.Duration {
	GinkgoHelper()
	b, err := rc.r.ReadByte()
	Expect(err).To(HaveOccurred(), "read %q where the connection should close", b)
	Expect(err.Error()).NotTo(ContainSubstring("timeout"), "the connection stayed open")
	return time.Since(from)
}

// onTime checks that a timeout of setting was seen after elapsed.
func onTime(elapsed, setting, early time.Duration) {
	GinkgoHelper()
	Expect(elapsed).To(BeNumerically(">=", setting-early), "fired early")
	Expect(elapsed).To(BeNumerically("<=", setting+edgeLate), "fired late")
}

var _ = Describe("HTTP/1 edges: early 400, timeouts, delayed close, validate_clusters", func() {
	var (
		dir  string
		port int
		ups  edgeUpstreams
	)
	BeforeEach(func() {
		dir = newDir()
		port = freePort()
		ups.sink = sinkUpstream()
		ups.slow = httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			_, _ = io.WriteString(w, "slow\n")
		}), false)
	})
	start := func(hcm string) *Sidecar {
		GinkgoHelper()
		s := Start(dir, edgeBootstrap(port, dir, ups, hcm, "validate_clusters: false"), "--file-flush-interval-msec", "20")
		s.WaitLive()
		return s
	}

	DescribeTable("answers bytes that cannot start a request with 400 at once",
		func(garbage string) {
			// Every timeout is far away: an answer within a second is
			// the parser's, not a timeout's.
			s := start("request_headers_timeout: 30s, delayed_close_timeout: 0s")
			c := dialRawClient(port)
			t0 := time.Now()
			c.send(garbage)
			raw, err := io.ReadAll(c.r)
			Expect(err).NotTo(HaveOccurred())
			Expect(time.Since(t0)).To(BeNumerically("<", time.Second))
			Expect(string(raw)).To(HavePrefix("HTTP/1.1 400 Bad Request\r\n"))
			Expect(string(raw)).To(ContainSubstring("\r\nconnection: close\r\n"))
			Expect(string(raw)).To(HaveSuffix("\r\n\r\nBad Request"))
			Eventually(func() string { return statValue(s, "http.edge.downstream_cx_protocol_error") }).Should(Equal("1"))
			Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).
				Should(Equal("- 400 DPE http1.codec_error\n"))
		},
		Entry("a TLS ClientHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
		Entry("binary bytes", "\x00\xff\x13\x37"),
		Entry("a space before the method", " GET / HTTP/1.1\r\n"),
		Entry("a separator in the method", "GE{T / HTTP/1.1"),
	)

	It("still serves HTTP/2 with prior knowledge and HTTP/1 on the AUTO listener", func() {
		start("")
		for _, c := range httpClients() {
			r := httpDo(c, http.MethodGet, listenerURL(port, "/d"), nil, nil)
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(r.Body).To(Equal("hi\n"))
		}
	})

	Describe("timeouts fire at their setting", func() {
		It("idle_timeout: a connection that sends nothing", func() {
			s := start("common_http_protocol_options: {idle_timeout: 1s}")
			t0 := time.Now()
			c := dialRawClient(port)
			onTime(c.closedAfter(t0), time.Second, 0)
			Expect(statValue(s, "http.edge.downstream_cx_idle_timeout")).To(Equal("1"))
		})

		It("idle_timeout: a kept-alive connection after its requests", func() {
			s := start("common_http_protocol_options: {idle_timeout: 1s}")
			c := dialRawClient(port)
			var last time.Time
			for i := range 10 {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
				resp, _ := c.response()
				last = time.Now()
				Expect(resp.StatusCode).To(Equal(http.StatusOK))
			}
			onTime(c.closedAfter(last), time.Second, edgeClientLag)
			Expect(statValue(s, "http.edge.downstream_cx_idle_timeout")).To(Equal("1"))
		})

		It("request_headers_timeout: a head that never ends", func() {
			s := start("request_headers_timeout: 1s")
			c := dialRawClient(port)
			t0 := time.Now()
			c.send("GET /d HTTP/1.1\r\nHost: h\r\n")
			resp, body := c.response()
			onTime(time.Since(t0), time.Second, 0)
			Expect(resp.StatusCode).To(Equal(http.StatusRequestTimeout))
			Expect(body).To(Equal("request header timeout"))
			Expect(statValue(s, "http.edge.downstream_rq_header_timeout")).To(Equal("1"))
		})

		It("stream_idle_timeout: a body that stops", func() {
			s := start("stream_idle_timeout: 1s")
			c := dialRawClient(port)
			c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n")
			var last time.Time
			for range 4 {
				time.Sleep(100 * time.Millisecond)
				c.send("a")
				last = time.Now()
			}
			resp, body := c.response()
			onTime(time.Since(last), time.Second, edgeEarly)
			Expect(resp.StatusCode).To(Equal(http.StatusRequestTimeout))
			Expect(body).To(Equal("stream timeout"))
			Expect(statValue(s, "http.edge.downstream_rq_idle_timeout")).To(Equal("1"))
		})

		It("request_timeout: a body that trickles, never idle for long", func() {
			s := start("request_timeout: 1.5s, stream_idle_timeout: 1s")
			c := dialRawClient(port)
			t0 := time.Now()
			c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n")
			stop := make(chan struct{})
			go func() {
				defer GinkgoRecover()
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
						_, _ = c.c.Write([]byte("a"))
					}
				}
			}()
			resp, body := c.response()
			close(stop)
			onTime(time.Since(t0), 1500*time.Millisecond, 0)
			Expect(resp.StatusCode).To(Equal(http.StatusRequestTimeout))
			Expect(body).To(Equal("request timeout"))
			Expect(statValue(s, "http.edge.downstream_rq_timeout")).To(Equal("1"))
			Expect(statValue(s, "http.edge.downstream_rq_idle_timeout")).To(Equal("0"))
		})

		It("max_connection_duration: closes a kept-alive connection, or says so on the response in flight", func() {
			s := start("common_http_protocol_options: {max_connection_duration: 1.5s}")
			t0 := time.Now()
			idle := dialRawClient(port)
			idle.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, _ := idle.response()
			Expect(resp.Close).To(BeFalse())
			onTime(idle.closedAfter(t0), 1500*time.Millisecond, 0)

			// A request in flight at the maximum duration (its
			// upstream answers after 2 s): its response says
			// Connection: close, then the connection closes.
			busy := dialRawClient(port)
			busy.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, body := busy.response()
			Expect(body).To(Equal("slow\n"))
			Expect(resp.Close).To(BeTrue(), "the response after the maximum duration keeps the connection")
			Expect(busy.c.Close()).To(Succeed())
			Eventually(func() string { return statValue(s, "http.edge.downstream_cx_max_duration_reached") }).Should(Equal("2"))
		})
	})

	Describe("http1_safe_max_connection_duration", func() {
		It("keeps an idle HTTP/1 connection past its maximum duration, answers its next request with connection: close, then closes it", func() {
			s := start("common_http_protocol_options: {max_connection_duration: 1s}, http1_safe_max_connection_duration: true")
			c := dialRawClient(port)
			c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, _ := c.response()
			Expect(resp.Close).To(BeFalse())
			// Past the maximum duration, idle: still open.
			time.Sleep(1500 * time.Millisecond)
			c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, body := c.response()
			Expect(body).To(Equal("hi\n"))
			Expect(resp.Close).To(BeTrue(), "the request after the maximum duration is the connection's last")
			Expect(c.closedAfter(time.Now())).To(BeNumerically("<", 5*time.Second))
			Expect(statValue(s, "http.edge.downstream_cx_max_duration_reached")).To(Equal("1"))
		})
	})

	Describe("max_connection_duration_jitter", func() {
		It("extends each connection's maximum duration by up to the percentage, never shortens it, and is refused on a cluster", func() {
			s := start("common_http_protocol_options: {max_connection_duration: 1s, max_connection_duration_jitter: {value: 100}}, drain_timeout_jitter: {value: 50}")
			t0 := time.Now()
			c := dialRawClient(port)
			c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, _ := c.response()
			Expect(resp.Close).To(BeFalse())
			closed := c.closedAfter(t0)
			Expect(closed).To(BeNumerically(">=", time.Second), "the jitter only adds")
			Expect(closed).To(BeNumerically("<=", 2*time.Second+edgeLate), "at most twice the duration with 100%")
			Eventually(func() string { return statValue(s, "http.edge.downstream_cx_max_duration_reached") }).Should(Equal("1"))

			r, _ := validate("cluster-jitter.yaml", proxySpec{
				Port:     freePort(),
				Clusters: []proxyCluster{{Name: "up", Port: 1, Extra: `{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, common_http_protocol_options: {max_connection_duration_jitter: {value: 10}}, explicit_http_config: {http_protocol_options: {}}}}}`}},
			}.YAML())
			Expect(r.ExitCode).To(Equal(1))
			Expect(r.Stderr).To(ContainSubstring("common_http_protocol_options.max_connection_duration_jitter: not supported by Outrigger on a cluster"))
		})
	})

	Describe("delayed_close_timeout", func() {
		It("waits for the client to close, then closes and counts it", func() {
			s := start("delayed_close_timeout: 1s")
			c := dialRawClient(port)
			c.send("GET /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
			resp, body := c.response()
			Expect(resp.Close).To(BeTrue())
			Expect(body).To(Equal("hi\n"))
			onTime(c.closedAfter(time.Now()), time.Second, edgeClientLag)
			Eventually(func() string { return statValue(s, "http.edge.downstream_cx_delayed_close_timeout") }).Should(Equal("1"))
		})

		It("closes as soon as the client does, counting nothing", func() {
			s := start("delayed_close_timeout: 5s")
			c := dialRawClient(port)
			c.send("GET /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
			c.response()
			Expect(c.c.Close()).To(Succeed())
			Eventually(func() string { return statValue(s, "http.edge.downstream_cx_destroy_remote") }, 2*time.Second).Should(Equal("1"))
			Expect(statValue(s, "http.edge.downstream_cx_delayed_close_timeout")).To(Equal("0"))
		})

		It("defaults to 1 s, and applies after a protocol error too", func() {
			s := start("")
			c := dialRawClient(port)
			c.send("\x16\x03\x01")
			resp, _ := c.response()
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
			onTime(c.closedAfter(time.Now()), time.Second, edgeClientLag)
			Eventually(func() string { return statValue(s, "http.edge.downstream_cx_delayed_close_timeout") }).Should(Equal("1"))
		})
	})

	Describe("validate_clusters", func() {
		It("refuses a route to an unknown cluster in --mode validate, with the field path", func() {
			cfg := edgeBootstrap(port, dir, ups, "", "")
			writeFile(filepath.Join(dir, "bad.yaml"), cfg)
			r := Run("--mode", "validate", "-c", filepath.Join(dir, "bad.yaml"))
			Expect(r.ExitCode).To(Equal(1), r.Stderr)
			Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].filter_chains[0].filters[0].typed_config." +
				"route_config.virtual_hosts[0].routes[3].route.cluster: unknown cluster 'absent'"))

			spec := edgeSpec(port, dir, ups, "", "")
			spec.Routes = strings.Replace(spec.Routes, "route: {cluster: absent}", "route: {weighted_clusters: {clusters: [{name: sink, weight: 1}, {name: gone, weight: 1}]}}", 1)
			weighted := spec.YAML()
			writeFile(filepath.Join(dir, "weighted.yaml"), weighted)
			r = Run("--mode", "validate", "-c", filepath.Join(dir, "weighted.yaml"))
			Expect(r.ExitCode).To(Equal(1), r.Stderr)
			Expect(r.Stderr).To(ContainSubstring("routes[3].route.weighted_clusters.clusters[1].name: unknown weighted cluster 'gone'"))
		})

		It("accepts it with validate_clusters: false, and the route answers 503 NC", func() {
			cfg := edgeBootstrap(port, dir, ups, "", "validate_clusters: false")
			writeFile(filepath.Join(dir, "lax.yaml"), cfg)
			r := Run("--mode", "validate", "-c", filepath.Join(dir, "lax.yaml"))
			Expect(r.ExitCode).To(Equal(0), r.Stderr)

			s := start("")
			resp := httpDo(&http.Client{Timeout: 5 * time.Second}, http.MethodGet, listenerURL(port, "/nc"), nil, nil)
			Expect(resp.Status).To(Equal(http.StatusServiceUnavailable))
			Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).
				Should(ContainSubstring("GET 503 NC cluster_not_found\n"))
			Expect(statValue(s, "http.edge.no_cluster")).To(Equal("1"))
		})
	})
})
