package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tcpBootstrap is a listener on port whose only filter is a tcp_proxy
// with the given fields (YAML flow mapping content, after stat_prefix
// "front"), logging to stdout, and the given clusters (YAML flow items).
func tcpBootstrap(port int, fields string, clusters ...string) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: tcp
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
          stat_prefix: front
          access_log:
          - name: envoy.access_loggers.stdout
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
              log_format: {text_format_source: {inline_string: "TCPLOG %%UPSTREAM_CLUSTER%% %%UPSTREAM_HOST%% %%BYTES_RECEIVED%% %%BYTES_SENT%% %%RESPONSE_FLAGS%% %%DOWNSTREAM_REMOTE_ADDRESS%% %%UPSTREAM_REQUEST_ATTEMPT_COUNT%%\n"}}
%s
`, strings.Join(clusters, ", "), port, blockFields(fields))
}

// blockFields turns "a: x, b: {c: y, d: z}" (top-level fields of a flow
// mapping) into block lines at the tcp_proxy's indentation.
func blockFields(fields string) string {
	var lines []string
	depth, start := 0, 0
	for i, r := range fields + "," {
		switch r {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				if f := strings.TrimSpace(fields[start:min(i, len(fields))]); f != "" {
					lines = append(lines, "          "+f)
				}
				start = i + 1
			}
		}
	}
	return strings.Join(lines, "\n")
}

// tcpCluster is a static cluster (YAML flow) of loopback ports.
func tcpCluster(name string, ports ...int) string {
	var eps []string
	for _, p := range ports {
		eps = append(eps, fmt.Sprintf("{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}", p))
	}
	return fmt.Sprintf("{name: %s, connect_timeout: 1s, load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [%s]}]}}", name, name, strings.Join(eps, ", "))
}

// startTCPServer serves every connection with serve until the spec ends
// and returns its port.
func startTCPServer(serve func(c *net.TCPConn)) int {
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
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				serve(c.(*net.TCPConn))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// echo sends back what it reads and half-closes after its peer's FIN.
func echo(c *net.TCPConn) {
	_, _ = io.Copy(c, c)
	_ = c.CloseWrite()
}

// expectStreamEcho writes msg on c while reading, closes c's write side
// and expects msg back whole, then the end of the stream.
func expectStreamEcho(c *net.TCPConn, msg []byte) {
	GinkgoHelper()
	go func() {
		defer GinkgoRecover()
		_, err := c.Write(msg)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
	}()
	got, err := io.ReadAll(c)
	Expect(err).NotTo(HaveOccurred())
	Expect(bytes.Equal(got, msg)).To(BeTrue(), "echoed %d bytes of %d", len(got), len(msg))
}

// dialTCP connects to a loopback port with a deadline for the spec.
func dialTCP(port int) *net.TCPConn {
	GinkgoHelper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() }) // some specs close it first
	Expect(c.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
	return c.(*net.TCPConn)
}

// pingEcho sends "ping" through the listener on port to an echo server,
// reads it back and closes the connection.
func pingEcho(port int) {
	GinkgoHelper()
	c := dialTCP(port)
	_, err := c.Write([]byte("ping"))
	Expect(err).NotTo(HaveOccurred())
	buf := make([]byte, 4)
	_, err = io.ReadFull(c, buf)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(buf)).To(Equal("ping"))
	Expect(c.Close()).To(Succeed())
}

var _ = Describe("TCP proxy", func() {
	It("carries bytes both ways, forwards the client's half-close, counts and logs the connection", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo", tcpCluster("echo", up)), "--file-flush-interval-msec", "50")

		c := dialTCP(port)
		msg := bytes.Repeat([]byte("outrigger"), 1<<17) // 1.1 MB: many reads, flow control
		go func() {
			defer GinkgoRecover()
			_, err := c.Write(msg)
			Expect(err).NotTo(HaveOccurred())
			Expect(c.CloseWrite()).To(Succeed())
		}()
		got, err := io.ReadAll(c) // ends with the echo server's FIN, forwarded
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(got, msg)).To(BeTrue(), "echoed %d bytes, want %d identical", len(got), len(msg))

		n := strconv.Itoa(len(msg))
		Eventually(s.Stdout).Should(MatchRegexp(`TCPLOG echo 127\.0\.0\.1:` + strconv.Itoa(up) + ` ` + n + ` ` + n + ` - 127\.0\.0\.1:\d+ 1\n`))
		Expect(statValue(s, "tcp.front.downstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "tcp.front.downstream_cx_rx_bytes_total")).To(Equal(n))
		Expect(statValue(s, "tcp.front.downstream_cx_tx_bytes_total")).To(Equal(n))
		Expect(statValue(s, "tcp.front.downstream_cx_no_route")).To(Equal("0"))
		Expect(statValue(s, "tcp.front.downstream_cx_rx_bytes_buffered")).To(Equal("0"))
		Expect(statValue(s, "tcp.front.upstream_flush_active")).To(Equal("0"))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"))
		Eventually(func() string { return statValue(s, "cluster.echo.upstream_cx_active") }).Should(Equal("0"))
		for _, name := range []string{"idle_timeout", "max_downstream_connection_duration", "upstream_flush_total",
			"downstream_flow_control_paused_reading_total", "downstream_flow_control_resumed_reading_total", "downstream_cx_tx_bytes_buffered"} {
			Expect(statValue(s, "tcp.front."+name)).NotTo(BeEmpty(), name)
		}
	})

	It("forwards the upstream's half-close and keeps carrying the client's bytes until its own", func() {
		heard := make(chan string, 1)
		up := startTCPServer(func(c *net.TCPConn) {
			_, _ = c.Write([]byte("greeting"))
			_ = c.CloseWrite()
			b, _ := io.ReadAll(c)
			heard <- string(b)
		})
		port := freePort()
		Start(newDir(), tcpBootstrap(port, "cluster: srv", tcpCluster("srv", up)))

		c := dialTCP(port)
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("greeting"))
		// Half-closed by the server: the client still talks.
		_, err = c.Write([]byte("still here"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		Eventually(heard, 10*time.Second).Should(Receive(Equal("still here")))
	})

	It("spreads connections over weighted_clusters by weight", func() {
		name := func(n string) func(c *net.TCPConn) {
			return func(c *net.TCPConn) { _, _ = c.Write([]byte(n)); _ = c.CloseWrite(); _, _ = io.Copy(io.Discard, c) }
		}
		a, b := startTCPServer(name("a")), startTCPServer(name("b"))
		port := freePort()
		Start(newDir(), tcpBootstrap(port, "weighted_clusters: {clusters: [{name: a, weight: 3}, {name: b, weight: 1}]}",
			tcpCluster("a", a), tcpCluster("b", b)))
		seen := map[string]int{}
		for range 80 {
			c := dialTCP(port)
			Expect(c.CloseWrite()).To(Succeed())
			got, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			seen[string(got)]++
			_ = c.Close()
		}
		// 80 draws at 3:1: each side is all but certain to be picked, a
		// more than b.
		Expect(seen["a"]+seen["b"]).To(Equal(80), "%v", seen)
		Expect(seen["a"]).To(BeNumerically(">", seen["b"]), "%v", seen)
		Expect(seen["b"]).To(BeNumerically(">", 0), "%v", seen)
	})

	It("closes a connection idle for idle_timeout", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo, idle_timeout: 0.3s", tcpCluster("echo", up)))
		c := dialTCP(port)
		_, err := c.Write([]byte("ping"))
		Expect(err).NotTo(HaveOccurred())
		b := make([]byte, 4)
		_, err = io.ReadFull(c, b)
		Expect(err).NotTo(HaveOccurred())
		// Then nothing moves: the proxy closes (before the 20s deadline).
		_, err = io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(statValue(s, "tcp.front.idle_timeout")).To(Equal("1"))
	})

	It("retries the connection up to max_connect_attempts, then gives up, counts and logs it", func() {
		dead1, dead2 := closedLoopbackPort(), closedLoopbackPort()
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: dead, max_connect_attempts: 3", tcpCluster("dead", dead1, dead2)), "--file-flush-interval-msec", "50")
		c := dialTCP(port)
		_, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s.Stdout).Should(MatchRegexp(`TCPLOG dead 127\.0\.0\.1:(` + strconv.Itoa(dead1) + `|` + strconv.Itoa(dead2) + `) 0 0 UF,URX 127\.0\.0\.1:\d+ 3\n`))
		Expect(statValue(s, "cluster.dead.upstream_cx_connect_fail")).To(Equal("3"))
		Expect(statValue(s, "cluster.dead.upstream_cx_connect_attempts_exceeded")).To(Equal("1"))
		Expect(statValue(s, "tcp.front.downstream_cx_total")).To(Equal("1"))
	})

	It("closes a connection to a cluster that does not exist as no route", func() {
		port := freePort()
		// weighted_clusters are not checked at load, as in Envoy.
		s := Start(newDir(), tcpBootstrap(port, "weighted_clusters: {clusters: [{name: nowhere, weight: 1}]}"), "--file-flush-interval-msec", "50")
		c := dialTCP(port)
		_, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(statValue(s, "tcp.front.downstream_cx_no_route")).To(Equal("1"))
		Eventually(s.Stdout).Should(ContainSubstring("TCPLOG nowhere - 0 0 NC "))
	})

	It("closes the connections it proxies when the server shuts down", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo", tcpCluster("echo", up)))
		c := dialTCP(port)
		_, err := c.Write([]byte("ping"))
		Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadFull(c, make([]byte, 4))
		Expect(err).NotTo(HaveOccurred())
		s.Signal(syscall.SIGINT)
		_, err = io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Wait(20 * time.Second)).To(Equal(0))
	})

	It("with upstream_connect_mode ON_DOWNSTREAM_DATA connects upstream once the client's first bytes came, reading them early", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo, upstream_connect_mode: ON_DOWNSTREAM_DATA, max_early_data_bytes: 4096", tcpCluster("echo", up)), "--file-flush-interval-msec", "50")

		// A client that ends without a byte gets no upstream.
		silent := dialTCP(port)
		Expect(silent.CloseWrite()).To(Succeed())
		_, err := io.ReadAll(silent)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s.Stdout).Should(MatchRegexp(`TCPLOG echo - 0 0 - 127\.0\.0\.1:\d+ 0\n`))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("0"))

		expectStreamEcho(dialTCP(port), bytes.Repeat([]byte("early"), 1<<14))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "tcp.front.early_data_received_count_total")).NotTo(Equal("0"))
		Expect(statValue(s, "tcp.front.downstream_cx_rx_bytes_total")).To(Equal(strconv.Itoa(5 << 14)))
		Expect(s.Get("/stats/prometheus").Body).To(ContainSubstring("# HELP proxy_tcp_early_data_received_count_total Reads"))
	})

	It("refuses what it does not implement, and a bad configuration, with their paths", func() {
		tp := "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
		r, _ := validate("tcp.yaml", tcpBootstrap(freePort(), "cluster: echo, on_demand: {resources_locator: \"xdstp://x\"}, upstream_idle_timeout: -1s", tcpCluster("echo", 1)))
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring(tp + ".on_demand.resources_locator: not supported by Outrigger"))
		Expect(r.Stderr).To(ContainSubstring("upstream_idle_timeout: must not be negative"))

		r, _ = validate("tcp.yaml", tcpBootstrap(freePort(), "cluster: echo, upstream_connect_mode: ON_DOWNSTREAM_DATA", tcpCluster("echo", 1)))
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("max_early_data_bytes: must be set when upstream_connect_mode is ON_DOWNSTREAM_DATA"))

		r, _ = validate("tcp.yaml", strings.Replace(tcpBootstrap(freePort(), "", tcpCluster("echo", 1)), "stat_prefix: front", "stat_prefix: \"\"", 1))
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring(tp + ".stat_prefix"))
		Expect(r.Stderr).To(ContainSubstring(tp + ".cluster_specifier"))
	})

	It("tunnels the stream through an HTTP/1.1 proxy with CONNECT", func() {
		seen := make(chan string, 1)
		up := startTCPServer(func(c *net.TCPConn) {
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			seen <- req.Method + " " + req.Host + " " + req.Header.Get("X-Tunnel")
			_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			_, _ = io.Copy(c, br)
			_ = c.CloseWrite()
		})
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, `cluster: proxy, tunneling_config: {hostname: "db.internal:5432", headers_to_add: [{header: {key: x-tunnel, value: "%UPSTREAM_CLUSTER%"}}]}`,
			tcpCluster("proxy", up)), "--file-flush-interval-msec", "50")
		c := dialTCP(port)
		_, err := c.Write([]byte("through the tunnel"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("through the tunnel"))
		Expect(seen).To(Receive(Equal("CONNECT db.internal:5432 proxy")))
		Eventually(s.Stdout).Should(MatchRegexp(`TCPLOG proxy 127\.0\.0\.1:` + strconv.Itoa(up) + ` 18 18 - `))
	})

	It("tunnels the stream through an HTTP/2 proxy, with CONNECT or POST", func() {
		seen := make(chan string, 2)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		protocols := new(http.Protocols)
		protocols.SetUnencryptedHTTP2(true)
		srv := &http.Server{Protocols: protocols, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen <- r.Method + " " + r.Host + " " + r.URL.Path
			w.WriteHeader(http.StatusOK)
			rc := http.NewResponseController(w)
			_ = rc.Flush()
			buf := make([]byte, 4096)
			for {
				n, err := r.Body.Read(buf)
				if n > 0 {
					_, _ = w.Write(buf[:n])
					_ = rc.Flush()
				}
				if err != nil {
					return
				}
			}
		})}
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Close)
		h2 := fmt.Sprintf(`{name: h2proxy, connect_timeout: 1s,
    typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http2_protocol_options: {}}}},
    load_assignment: {cluster_name: h2proxy, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}`, ln.Addr().(*net.TCPAddr).Port)
		for _, tc := range []struct{ fields, want string }{
			{`tunneling_config: {hostname: "db.internal:5432"}`, "CONNECT db.internal:5432 "},
			{`tunneling_config: {hostname: "db.internal:5432", use_post: true, post_path: /tcp}`, "POST db.internal:5432 /tcp"},
		} {
			port := freePort()
			s := Start(newDir(), tcpBootstrap(port, "cluster: h2proxy, "+tc.fields, h2))
			c := dialTCP(port)
			msg := bytes.Repeat([]byte("h2 tunnel "), 20000)
			expectStreamEcho(c, msg)
			Expect(seen).To(Receive(Equal(tc.want)))
			s.Signal(syscall.SIGINT)
			Expect(s.Wait(20 * time.Second)).To(Equal(0))
		}
	})

	It("keeps proxied connections through /drain_listeners, and closes them when discovery removes their listener, after the drain time", func() {
		up := startTCPServer(echo)
		port := freePort()
		listener := fmt.Sprintf(`{"@type": type.googleapis.com/envoy.config.listener.v3.Listener, name: tcp, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: front, cluster: echo}}]}]}`, port)
		dir := ldsSetup("version_info: \"1\"\nresources:\n- " + listener + "\n")
		file, err := yamlQuote(filepath.Join(dir, ldsFileName))
		Expect(err).NotTo(HaveOccurred())
		s := Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
dynamic_resources:
  lds_config: {resource_api_version: V3, path_config_source: {path: %s}}
`, tcpCluster("echo", up), file), "--drain-time-s", "1")
		var c *net.TCPConn
		Eventually(func() error {
			conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err == nil {
				c = conn.(*net.TCPConn)
			}
			return err
		}).Should(Succeed())
		DeferCleanup(func() { _ = c.Close() })
		Expect(c.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
		expectEcho(c)
		// Stopped listeners keep their connections, as in Envoy.
		Expect(s.Post("/drain_listeners").Status).To(Equal(200))
		expectEcho(c)
		// Removed by discovery: closed at the end of the drain time.
		replaceLDS(dir, "version_info: \"2\"\nresources: []\n")
		_, err = io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
	})
})
