package e2e

import (
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
	"golang.org/x/net/http2"
)

// h2UpstreamBootstrap has one listener with WebSocket and CONNECT
// upgrades routed to HTTP/2 clusters: xc, whose server announces extended
// CONNECT, and plain, whose server does not (paths under /noxc). A CONNECT
// to 127.0.0.1:<echo1> is forwarded to xc, one to 127.0.0.1:<echo2> to
// plain. Access logs go to stdout.
func h2UpstreamBootstrap(port, xcUp, plainUp, echo1, echo2 int) string {
	h2 := h2cOptions()
	return proxySpec{
		Port:     port,
		Listener: "{name: h2up}",
		HCM: `{stat_prefix: h2up, upgrade_configs: [{upgrade_type: websocket}, {upgrade_type: CONNECT}], http2_protocol_options: {allow_connect: true},
			access_log: [` + stdoutLog("H2UP %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_CLUSTER% %BYTES_RECEIVED% %BYTES_SENT% [%UPSTREAM_TRANSPORT_FAILURE_REASON%]\n") + `]}`,
		Hosts: fmt.Sprintf(`[{name: plain_connect, domains: ["127.0.0.1:%d"], routes: [{match: {connect_matcher: {}}, route: {cluster: plain}}]}]`, echo2),
		Routes: `[{match: {connect_matcher: {}}, route: {cluster: xc}},
			{match: {prefix: /noxc}, route: {cluster: plain}},
			{match: {path: /linger}, route: {cluster: xc, idle_timeout: 0.5s}},
			{match: {path: /slow}, route: {cluster: xc, timeout: 0.3s}},
			{match: {path: /timed}, route: {cluster: xc, timeout: 0.3s}},
			{match: {path: /linger-on}, route: {cluster: xc, prefix_rewrite: /linger, idle_timeout: 0s}},
			{match: {prefix: /}, route: {cluster: xc}}]`,
		Clusters: []proxyCluster{{Name: "xc", Port: xcUp, Extra: h2}, {Name: "plain", Port: plainUp, Extra: h2}},
	}.YAML()
}

var _ = Describe("Upgrades to HTTP/2 upstreams", func() {
	var (
		s            *Sidecar
		port         int
		echo1, echo2 int
		xc           *h2TunnelServer
	)
	BeforeEach(func() {
		var xcUp, plainUp int
		xcUp, xc = startH2TunnelServer(true)
		plainUp, _ = startH2TunnelServer(false)
		echo1, echo2 = startTCPEcho(false), startTCPEcho(false)
		port = freePort()
		s = Start(newDir(), h2UpstreamBootstrap(port, xcUp, plainUp, echo1, echo2), "--file-flush-interval-msec", "50")
	})

	It("sends an HTTP/1.1 WebSocket upgrade as an extended CONNECT and answers the upstream's 200 with 101", func() {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/chat", port), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(resp.StatusCode).To(Equal(101))
		Expect(resp.Header.Get("Upgrade")).To(Equal("websocket"))
		Expect(resp.Header.Get("X-Upstream")).To(Equal("h2"))
		// :method CONNECT, :protocol websocket, the path; no Upgrade or
		// Connection header.
		Expect(xc.requests).To(Receive(Equal(fmt.Sprintf("CONNECT websocket 127.0.0.1:%d /chat  ", port))))
		Expect(s.Get("/stats?filter=upgrades_active").Body).To(ContainSubstring("http.h2up.downstream_cx_upgrades_active: 1"))
		for _, msg := range []string{"hello", strings.Repeat("x", 30000), "bye"} {
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

		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`H2UP GET /chat 101 - via_upstream xc 3\d{4} 3\d{4} \[-\]\n`))
		Eventually(func() string {
			return s.Get("/stats?filter=(upgrades|cluster.xc.upstream_(rq_101|cx_http2_total|rq_completed))").Body
		}, 5*time.Second).Should(And(
			ContainSubstring("http.h2up.downstream_cx_upgrades_total: 1"),
			ContainSubstring("http.h2up.downstream_cx_upgrades_active: 0"),
			ContainSubstring("cluster.xc.upstream_rq_101: 1"),
			ContainSubstring("cluster.xc.upstream_rq_completed: 1"),
			ContainSubstring("cluster.xc.upstream_cx_http2_total: 1")))
	})

	It("carries an HTTP/2 client's extended CONNECT to an HTTP/2 upstream", func() {
		c := dialH2WebSocket(port, "/h2chat")
		Expect(c.status).To(Equal("200"))
		Expect(xc.requests).To(Receive(Equal(fmt.Sprintf("CONNECT websocket 127.0.0.1:%d /h2chat  ", port))))
		for _, msg := range []string{"hello", "over h2 both ways"} {
			c.send(0x1, []byte(msg))
			op, got := c.receive()
			Expect(op).To(Equal(byte(0x1)))
			Expect(got).To(Equal("echo: " + msg))
		}
		// The client ends its stream: the upstream ends its own, which
		// ends the client's.
		Expect(c.fr.WriteData(1, true, nil)).To(Succeed())
		for i := 0; !c.ended; i++ {
			Expect(i).To(BeNumerically("<", 100), "the stream did not end")
			c.readFrame()
		}
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`H2UP GET /h2chat 200 - via_upstream xc \d+ \d+ \[-\]\n`))
		Expect(s.Get("/stats?filter=cluster.xc.upstream_rq_101").Body).To(ContainSubstring("cluster.xc.upstream_rq_101: 1"))
	})

	It("forwards a CONNECT to an HTTP/2 upstream with :authority only, announced extended CONNECT or not", func() {
		for _, tc := range []struct {
			echo    int
			cluster string
		}{{echo1, "xc"}, {echo2, "plain"}} {
			target := fmt.Sprintf("127.0.0.1:%d", tc.echo)
			c, r, status := rawConnect(port, target)
			Expect(status).To(HavePrefix("HTTP/1.1 200 "))
			echoThrough(c, r, "through the h2 tunnel")
			echoThrough(c, r, strings.Repeat("z", 100000))
			Expect(c.(*net.TCPConn).CloseWrite()).To(Succeed())
			_, err := r.ReadByte()
			Expect(err).To(MatchError(io.EOF))
			Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring(fmt.Sprintf("H2UP CONNECT - 200 - via_upstream %s 100021 100021 [-]\n", tc.cluster)))
		}
		Expect(xc.requests).To(Receive(Equal(fmt.Sprintf("CONNECT  127.0.0.1:%d   ", echo1))))
		Expect(s.Get("/stats?filter=cluster.plain.upstream_rq_200").Body).To(ContainSubstring("cluster.plain.upstream_rq_200: 1"))
	})

	It("keeps the client's direction of a CONNECT going after the HTTP/2 upstream ended its own", func() {
		got := make(chan string, 1)
		target := startTCPServer(func(c *net.TCPConn) {
			first := make([]byte, 5)
			if _, err := io.ReadFull(c, first); err != nil {
				return
			}
			_, _ = io.WriteString(c, "bye")
			// The target's end becomes the upstream's END_STREAM.
			_ = c.CloseWrite()
			rest, _ := io.ReadAll(c)
			got <- string(first) + string(rest)
		})
		c, r, status := rawConnect(port, fmt.Sprintf("127.0.0.1:%d", target))
		Expect(status).To(HavePrefix("HTTP/1.1 200 "))
		_, err := io.WriteString(c, "first")
		Expect(err).NotTo(HaveOccurred())
		// The upstream's END_STREAM half-closes the client...
		back, err := io.ReadAll(r)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(back)).To(Equal("bye"))
		// ...whose bytes still reach the target, until its own end.
		_, err = io.WriteString(c, " and more")
		Expect(err).NotTo(HaveOccurred())
		Expect(c.(*net.TCPConn).CloseWrite()).To(Succeed())
		Eventually(got, 10*time.Second).Should(Receive(Equal("first and more")))
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("H2UP CONNECT - 200 - via_upstream xc 14 3 [-]\n"))
	})

	It("keeps an HTTP/2 client's direction of an extended CONNECT going after the upstream ended its own", func() {
		c := dialH2WebSocket(port, "/half")
		Expect(c.status).To(Equal("200"))
		c.send(0x1, []byte("first"))
		op, got := c.receive()
		Expect(op).To(Equal(byte(0x1)))
		Expect(got).To(Equal("echo: first"))
		// The upstream's END_STREAM reaches the client...
		for i := 0; !c.ended; i++ {
			Expect(i).To(BeNumerically("<", 100), "the stream did not end")
			c.readFrame()
		}
		// ...whose messages still reach the upstream.
		c.send(0x1, []byte("after the end"))
		Eventually(xc.late, 10*time.Second).Should(Receive(Equal("after the end")))
		Expect(c.fr.WriteData(1, true, nil)).To(Succeed())
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`H2UP GET /half 200 - via_upstream xc \d+ \d+ \[-\]\n`))
	})

	It("answers 503 (UR) when the upstream did not announce extended CONNECT or resets the stream, and relays its refusals", func() {
		dial := func(path string) (*websocket.Conn, *http.Response, error) {
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			return d.Dial(fmt.Sprintf("ws://127.0.0.1:%d%s", port, path), nil)
		}
		for _, path := range []string{"/noxc/chat", "/reset-before"} {
			_, resp, err := dial(path)
			Expect(err).To(MatchError(websocket.ErrBadHandshake))
			Expect(resp.StatusCode).To(Equal(503))
			Expect(resp.Close).To(BeTrue())
		}
		_, resp, err := dial("/refuse")
		Expect(err).To(MatchError(websocket.ErrBadHandshake))
		Expect(resp.StatusCode).To(Equal(403))
		body, _ := io.ReadAll(resp.Body)
		Expect(string(body)).To(Equal("not here"))
		Eventually(s.Stdout, 5*time.Second).Should(And(
			MatchRegexp(`H2UP GET /noxc/chat 503 UR upstream_reset_before_response_started\{remote_reset\} plain \d+ \d+ \[net/http: extended connect not supported by peer\]\n`),
			ContainSubstring("H2UP GET /reset-before 503 UR upstream_reset_before_response_started{remote_reset} xc "),
			ContainSubstring("H2UP GET /refuse 403 - via_upstream xc ")))

		// A reset once the tunnel is open cuts the client's connection.
		c, resp, err := dial("/reset-after")
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(resp.StatusCode).To(Equal(101))
		Expect(c.WriteMessage(websocket.TextMessage, []byte("hello"))).To(Succeed())
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _, err = c.ReadMessage()
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the tunnel outlived the upstream's reset")
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("H2UP GET /reset-after 101 "))
		Eventually(func() string { return s.Get("/stats?filter=upgrades_active").Body }, 5*time.Second).Should(
			ContainSubstring("http.h2up.downstream_cx_upgrades_active: 0"))
	})

	It("closes a tunnel to an HTTP/2 upstream that stays silent for the stream idle timeout", func() {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/linger", port), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(resp.StatusCode).To(Equal(101))
		Expect(c.WriteMessage(websocket.TextMessage, []byte("once"))).To(Succeed())
		_, got, err := c.ReadMessage()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("echo: once"))
		// The client ends its side; the upstream keeps its own open and
		// sends nothing: only the idle timeout ends the tunnel, watching
		// the upstream stream alone.
		Expect(c.UnderlyingConn().(*net.TCPConn).CloseWrite()).To(Succeed())
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _, err = c.ReadMessage()
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the tunnel outlived its idle timeout")
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`H2UP GET /linger 101 SI stream_idle_timeout xc \d+ \d+ \[-\]\n`))
		Expect(s.Get("/stats?filter=downstream_rq_idle_timeout").Body).To(ContainSubstring("http.h2up.downstream_rq_idle_timeout: 1"))
	})

	It("cuts tunnels to HTTP/2 upstreams when the proxy shuts down", func() {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, _, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/linger-on", port), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(xc.requests).To(Receive(HaveSuffix(" /linger  ")))
		// Without an idle timeout, a tunnel whose client ended its side
		// and whose upstream is silent lasts until the proxy stops.
		Expect(c.UnderlyingConn().(*net.TCPConn).CloseWrite()).To(Succeed())
		s.Signal(syscall.SIGINT)
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, _, err = c.ReadMessage()
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, os.ErrDeadlineExceeded)).To(BeFalse(), "the tunnel outlived the shutdown")
		Expect(s.Wait(20 * time.Second)).To(Equal(0))
	})

	It("applies the route timeout to the wait for the HTTP/2 upstream's answer, not to the tunnel", func() {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		_, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/slow", port), nil)
		Expect(err).To(MatchError(websocket.ErrBadHandshake))
		Expect(resp.StatusCode).To(Equal(504))
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("H2UP GET /slow 504 UT upstream_response_timeout xc "))
		Expect(s.Get("/stats?filter=cluster.xc.upstream_rq_timeout").Body).To(ContainSubstring("cluster.xc.upstream_rq_timeout: 1"))

		c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/timed", port), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(resp.StatusCode).To(Equal(101))
		// Well past the route timeout, the tunnel still carries messages.
		time.Sleep(time.Second)
		Expect(c.WriteMessage(websocket.TextMessage, []byte("later"))).To(Succeed())
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, got, err := c.ReadMessage()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("echo: later"))
	})

	It("answers an HTTP/2 client's extended CONNECT with the 503 when the upstream cannot take it", func() {
		c := dialH2WebSocket(port, "/noxc/h2")
		Expect(c.status).To(Equal("503"))
		Expect(c.settings).To(HaveKeyWithValue(http2.SettingEnableConnectProtocol, uint32(1)))
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("H2UP GET /noxc/h2 503 UR upstream_reset_before_response_started{remote_reset} plain "))
	})
})
