package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// startWebSocketEcho serves WebSocket connections on 127.0.0.1 that echo
// every message back with "echo: " in front; it returns the port.
func startWebSocketEcho() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	up := websocket.Upgrader{}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !websocket.IsWebSocketUpgrade(r) {
			http.Error(w, "not a websocket", http.StatusTeapot)
			return
		}
		c, err := up.Upgrade(w, r, http.Header{"X-Upstream": {"ws"}})
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			kind, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(kind, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// startTCPEcho serves raw TCP connections on 127.0.0.1 that echo bytes
// back; with connectFirst it first reads an HTTP CONNECT head and answers
// 200, as a forward proxy does. It returns the port.
func startTCPEcho(connectFirst bool) int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				r := bufio.NewReader(c)
				if connectFirst {
					req, err := http.ReadRequest(r)
					if err != nil || req.Method != http.MethodConnect {
						_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
						return
					}
					_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				}
				_, _ = io.Copy(c, r)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// upgradeBootstrap has three listeners: "ws" with WebSocket upgrades
// enabled (a route disabling them on /off) and CONNECT terminated to a
// TCP echo server; "fwd" forwarding CONNECT to a forward proxy; "plain"
// with no upgrade configured. Access logs go to stdout.
func upgradeBootstrap(wsPort, plainPort, fwdPort, wsUp, echoUp, proxyUp int) string {
	GinkgoHelper()
	listener := func(name string, port int, prefix, upgrades, routes string) proxySpec {
		return proxySpec{
			Port:     port,
			Listener: "{name: " + name + "}",
			HCM: `{stat_prefix: ` + prefix + `, upgrade_configs: [` + upgrades + `], http2_protocol_options: {allow_connect: true},
				access_log: [` + stdoutLog("UPGRADE "+prefix+" %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %BYTES_RECEIVED% %BYTES_SENT% %RESPONSE_CODE_DETAILS% %UPSTREAM_CLUSTER%\n") + `]}`,
			Routes: "[" + routes + "]",
		}
	}
	ws := listener("ws", wsPort, "wsl", `{upgrade_type: WebSocket}`, `
		{match: {connect_matcher: {}}, route: {cluster: echo, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {}}]}},
		{match: {prefix: /off}, route: {cluster: ws, upgrade_configs: [{upgrade_type: websocket, enabled: false}]}},
		{match: {prefix: /}, route: {cluster: ws}}`)
	ws.Clusters = []proxyCluster{{Name: "ws", Port: wsUp}, {Name: "echo", Port: echoUp}, {Name: "fproxy", Port: proxyUp}}
	ws.More = []proxySpec{
		listener("plain", plainPort, "plain", ``, `{match: {prefix: /}, route: {cluster: ws}}`),
		listener("fwd", fwdPort, "fwd", `{upgrade_type: connect}`, `{match: {connect_matcher: {}}, route: {cluster: fproxy}}`),
	}
	return ws.YAML()
}

// rawConnect sends a CONNECT for target on a new connection to port and
// returns the connection, its reader and the response head's status line.
func rawConnect(port int, target string) (net.Conn, *bufio.Reader, string) {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	Expect(err).NotTo(HaveOccurred())
	r := bufio.NewReader(c)
	status, err := r.ReadString('\n')
	Expect(err).NotTo(HaveOccurred())
	for {
		line, err := r.ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		if strings.HasPrefix(status, "HTTP/1.1 2") {
			// A tunnel's answer has no body framing.
			Expect(strings.ToLower(line)).NotTo(HavePrefix("content-length"))
			Expect(strings.ToLower(line)).NotTo(HavePrefix("transfer-encoding"))
		}
		if line == "\r\n" {
			return c, r, strings.TrimSpace(status)
		}
	}
}

// echoThrough writes msg on c and expects it back on r.
func echoThrough(c net.Conn, r *bufio.Reader, msg string) {
	GinkgoHelper()
	_, err := io.WriteString(c, msg)
	Expect(err).NotTo(HaveOccurred())
	got := make([]byte, len(msg))
	_, err = io.ReadFull(r, got)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(got)).To(Equal(msg))
}

var _ = Describe("Upgrades: WebSocket and CONNECT", func() {
	var (
		s                          *Sidecar
		wsPort, plainPort, fwdPort int
	)
	BeforeEach(func() {
		// The peers first: their ports, taken while they listen, cannot
		// be among those freePort hands out for the sidecar's listeners.
		wsUp, echoUp, proxyUp := startWebSocketEcho(), startTCPEcho(false), startTCPEcho(true)
		wsPort, plainPort, fwdPort = freePort(), freePort(), freePort()
		s = Start(newDir(), upgradeBootstrap(wsPort, plainPort, fwdPort, wsUp, echoUp, proxyUp), "--file-flush-interval-msec", "50")
	})

	It("carries a WebSocket over HTTP/1.1 both ways, counts it and logs its bytes", func() {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/chat", wsPort), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(resp.StatusCode).To(Equal(101))
		Expect(resp.Header.Get("X-Upstream")).To(Equal("ws"))
		Expect(resp.Header.Get("Server")).To(Equal("outrigger"))
		Expect(s.Get("/stats?filter=upgrades_active").Body).To(ContainSubstring("http.wsl.downstream_cx_upgrades_active: 1"))
		for _, msg := range []string{"hello", strings.Repeat("x", 100000), "bye"} {
			Expect(c.WriteMessage(websocket.TextMessage, []byte(msg))).To(Succeed())
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, got, err := c.ReadMessage()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal("echo: " + msg))
		}
		Expect(c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))).To(Succeed())
		_, _, err = c.ReadMessage()
		Expect(websocket.IsCloseError(err, websocket.CloseNormalClosure)).To(BeTrue(), "%v", err)
		c.Close()

		Eventually(func() string { return s.Get("/stats?filter=upgrades").Body }, 5*time.Second).Should(And(
			ContainSubstring("http.wsl.downstream_cx_upgrades_total: 1"),
			ContainSubstring("http.wsl.downstream_cx_upgrades_active: 0")))
		// Both directions' bytes are the stream's: well above the
		// 100000-byte message each way.
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`UPGRADE wsl GET /chat 101 1\d{5} 1\d{5} via_upstream ws\n`))
	})

	It("closes upgraded connections when the proxy shuts down", func() {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, _, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/chat", wsPort), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(c.WriteMessage(websocket.TextMessage, []byte("before"))).To(Succeed())
		_, got, err := c.ReadMessage()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("echo: before"))
		s.Signal(syscall.SIGINT)
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, _, err = c.ReadMessage()
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the tunnel outlived the shutdown")
		Expect(s.Wait(20 * time.Second)).To(Equal(0))
	})

	It("refuses upgrades with 403 where they are not enabled, and serves ordinary requests", func() {
		for _, port := range []int{plainPort, wsPort} {
			path := "/x"
			if port == wsPort {
				path = "/off"
			}
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			_, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d%s", port, path), nil)
			Expect(err).To(MatchError(websocket.ErrBadHandshake))
			Expect(resp.StatusCode).To(Equal(403))
			Expect(resp.Close).To(BeTrue())
		}
		Eventually(s.Stdout, 5*time.Second).Should(And(
			ContainSubstring("UPGRADE plain GET /x 403 0 0 upgrade_failed -\n"),
			ContainSubstring("UPGRADE wsl GET /off 403 0 0 upgrade_failed -\n")))
		stats := s.Get("/stats?filter=ws_on_non_ws_route").Body
		Expect(stats).To(ContainSubstring("http.plain.downstream_rq_ws_on_non_ws_route: 1"))
		Expect(stats).To(ContainSubstring("http.wsl.downstream_rq_ws_on_non_ws_route: 1"))
		// Without upgrade headers the same routes serve as usual.
		resp := httpDo(http.DefaultClient, http.MethodGet, listenerURL(plainPort, "/x"), nil, nil)
		Expect(resp.Status).To(Equal(http.StatusTeapot))
	})

	It("terminates a CONNECT at the proxy and relays its bytes to the cluster over TCP", func() {
		c, r, status := rawConnect(wsPort, "anywhere.example:443")
		Expect(status).To(HavePrefix("HTTP/1.1 200 "))
		echoThrough(c, r, "ping over the tunnel")
		echoThrough(c, r, strings.Repeat("y", 70000))
		Expect(c.(*net.TCPConn).CloseWrite()).To(Succeed())
		_, err := r.ReadByte()
		Expect(err).To(MatchError(io.EOF))
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("UPGRADE wsl CONNECT - 200 70020 70020 via_upstream echo\n"))
	})

	It("forwards a CONNECT to the cluster when the route does not terminate it", func() {
		c, r, status := rawConnect(fwdPort, "origin.example:80")
		// The forward proxy answered the CONNECT (the proxy writes its own
		// reason phrase, as Envoy's codec does) and echoes what follows.
		Expect(status).To(HavePrefix("HTTP/1.1 200 "))
		echoThrough(c, r, "through the forward proxy")
		Expect(c.(*net.TCPConn).CloseWrite()).To(Succeed())
		_, err := r.ReadByte()
		Expect(err).To(MatchError(io.EOF))
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("UPGRADE fwd CONNECT - 200 25 25 via_upstream fproxy\n"))
		// On the listener without CONNECT enabled, the same request is
		// refused.
		_, _, status = rawConnect(plainPort, "origin.example:80")
		Expect(status).To(HavePrefix("HTTP/1.1 404 "))
	})

	It("refuses, with their paths, the upgrade settings it does not implement and duplicate upgrade types", func() {
		cfg := fmt.Sprintf(`
static_resources:
  clusters:
  - {name: c, connect_timeout: 1s, http2_protocol_options: {allow_connect: true}, load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: u
          upgrade_configs: [{upgrade_type: websocket, filters: [{name: envoy.filters.http.router}]}]
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {connect_matcher: {}}, route: {cluster: c, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {proxy_protocol_config: {version: V1, pass_through_tlvs: {}}}}]}}
          http_filters: [{name: envoy.filters.http.router}]
`, freePort())
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		const hcm = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config."
		Expect(r.Stderr).To(ContainSubstring(hcm + "route_config.virtual_hosts[0].routes[0].route.upgrade_configs[0].connect_config.proxy_protocol_config.pass_through_tlvs: the PROXY header of a terminated CONNECT carries no TLVs"))
		Expect(r.Stderr).NotTo(ContainSubstring("upgrade_configs[0].filters"))

		// Duplicate upgrade types, in the connection manager and in a
		// route (each found when its part is built).
		base := strings.NewReplacer("http2_protocol_options: {allow_connect: true}, ", "", "connect_config: {proxy_protocol_config: {version: V1, pass_through_tlvs: {}}}", "connect_config: {}").Replace(cfg)
		r, _ = validate("b.yaml", strings.Replace(base, "filters: [{name: envoy.filters.http.router}]}]", "}, {upgrade_type: WebSocket}]", 1))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(hcm + "upgrade_configs[1].upgrade_type: multiple upgrade configs with the same name: 'WebSocket'"))
		r, _ = validate("b.yaml", strings.NewReplacer("filters: [{name: envoy.filters.http.router}]}]", "}]",
			"connect_config: {}", "connect_config: {}}, {upgrade_type: connect").Replace(base))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(hcm + "route_config.virtual_hosts[0].routes[0].route.upgrade_configs[1].upgrade_type: duplicate upgrade connect"))
		// Fixed, it loads.
		fixed := strings.Replace(base, "filters: [{name: envoy.filters.http.router}]}]", "}]", 1)
		r, _ = validate("b.yaml", fixed)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
		// allow_connect belongs to listeners: a cluster refuses it.
		r, _ = validate("b.yaml", strings.Replace(fixed, "connect_timeout: 1s,", "connect_timeout: 1s, http2_protocol_options: {allow_connect: true},", 1))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].http2_protocol_options.allow_connect: not supported by Outrigger on a cluster"))
	})
})
