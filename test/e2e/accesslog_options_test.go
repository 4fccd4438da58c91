package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"github.com/gorilla/websocket"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// startSlowStream serves, on 127.0.0.1, a 200 whose body comes in n
// pieces of 10 bytes, one every gap; it returns the port.
func startSlowStream(n int, gap time.Duration) int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl := w.(http.Flusher)
		for i := range n {
			_, _ = fmt.Fprintf(w, "piece %03d\n", i)
			fl.Flush()
			time.Sleep(gap)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// accessLogOptionsBootstrap is a listener on port with WebSocket and
// CONNECT (terminated to echoUp) enabled, routing /slow to slowUp and the
// rest to wsUp, with the given access_log_options; its entries go to
// stdout (lines "ALOG ..."; "CODED ..." through a status_code_filter) and
// to the access log service on alsPort.
func accessLogOptionsBootstrap(port, slowUp, wsUp, echoUp, alsPort int, options string) string {
	cluster := func(name string, port int) string {
		return fmt.Sprintf(`
  - {name: %s, connect_timeout: 1s, load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}`, name, name, port)
	}
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters:%s%s%s
  - name: als
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment: {cluster_name: als, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: opts
          upgrade_configs: [{upgrade_type: websocket}]
          %s
          access_log:
          - name: envoy.access_loggers.stdout
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
              log_format: {text_format_source: {inline_string: "ALOG %%ACCESS_LOG_TYPE%% %%REQ(:METHOD)%% %%REQ(:PATH)%% %%RESPONSE_CODE%% %%BYTES_RECEIVED%% %%BYTES_SENT%% %%DURATION%% %%ROUTE_NAME%%\n"}}
          - name: coded
            filter: {status_code_filter: {comparison: {op: GE, value: {default_value: 100, runtime_key: coded.min}}}}
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
              log_format: {text_format_source: {inline_string: "CODED %%ACCESS_LOG_TYPE%% %%REQ(:PATH)%% %%RESPONSE_CODE%%\n"}}
          - name: envoy.access_loggers.http_grpc
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig
              common_config:
                log_name: opts
                transport_api_version: V3
                buffer_flush_interval: 0.1s
                grpc_service: {envoy_grpc: {cluster_name: als}}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {name: tunnel, match: {connect_matcher: {}}, route: {cluster: echo, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {}}]}}
              - {name: slow, match: {prefix: /slow}, route: {cluster: slow}}
              - {name: ws, match: {prefix: /}, route: {cluster: ws}}
          http_filters: [{name: envoy.filters.http.router}]
`, cluster("slow", slowUp), cluster("ws", wsUp), cluster("echo", echoUp), alsPort, port, options)
}

// aLogLine is one "ALOG" line: its type, method, path, status and sizes.
type aLogLine struct {
	Type, Method, Path string
	Code, Recv, Sent   int
}

var aLogRE = regexp.MustCompile(`(?m)^ALOG (\S+) (\S+) (\S+) (\d+) (\d+) (\d+) \d+ \S+$`)

// aLogLines returns the ALOG lines of out whose path is path, in order.
func aLogLines(out, path string) []aLogLine {
	var lines []aLogLine
	for _, m := range aLogRE.FindAllStringSubmatch(out, -1) {
		if m[3] != path {
			continue
		}
		n := func(s string) int { v, _ := strconv.Atoi(s); return v }
		lines = append(lines, aLogLine{Type: m[1], Method: m[2], Path: m[3], Code: n(m[4]), Recv: n(m[5]), Sent: n(m[6])})
	}
	return lines
}

// expectPeriodicThenEnd checks lines: periodic entries whose byte counts
// never go down, at least min of them, then one end entry with the
// totals; first is the type of the lines before the periodic ones.
func expectPeriodicThenEnd(lines []aLogLine, first []string, min int) {
	GinkgoHelper()
	Expect(len(lines)).To(BeNumerically(">=", len(first)+min+1), "%v", lines)
	for i, t := range first {
		Expect(lines[i].Type).To(Equal(t), "%v", lines)
	}
	periodic, end := lines[len(first):len(lines)-1], lines[len(lines)-1]
	Expect(end.Type).To(Equal("DownstreamEnd"))
	prev := aLogLine{}
	for _, l := range periodic {
		Expect(l.Type).To(Equal("DownstreamPeriodic"), "%v", lines)
		Expect(l.Sent).To(BeNumerically(">=", prev.Sent))
		Expect(l.Recv).To(BeNumerically(">=", prev.Recv))
		prev = l
	}
	Expect(end.Sent).To(BeNumerically(">=", prev.Sent))
}

var _ = Describe("The connection manager's access_log_options", func() {
	var (
		s         *Sidecar
		port      int
		collector *alsCollector
	)
	start := func(options string) {
		slowUp, wsUp, echoUp := startSlowStream(12, 100*time.Millisecond), startWebSocketEcho(), startTCPEcho(false)
		var alsPort int
		collector, alsPort = startCollector()
		port = freePort()
		s = Start(newDir(), accessLogOptionsBootstrap(port, slowUp, wsUp, echoUp, alsPort, options), "--file-flush-interval-msec", "50")
	}

	It("logs a streamed response when its headers are decoded, every interval while it lasts, and at its end", func() {
		start(`access_log_options: {access_log_flush_interval: 0.1s, flush_access_log_on_new_request: true}`)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(listenerURL(port, "/slow"))
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(body).To(HaveLen(120))

		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`ALOG DownstreamEnd GET /slow 200 0 120 \d+ slow\n`))
		lines := aLogLines(s.Stdout(), "/slow")
		// The start entry: no response yet, nothing sent.
		Expect(lines[0]).To(Equal(aLogLine{Type: "DownstreamStart", Method: "GET", Path: "/slow"}))
		// About twelve periodic entries over the 1.2 s; three at least,
		// the later ones after some of the body went.
		expectPeriodicThenEnd(lines, []string{"DownstreamStart"}, 3)
		Expect(lines[len(lines)-2].Sent).To(BeNumerically(">", 0))
		Expect(lines[len(lines)-1].Sent).To(Equal(120))

		// status_code_filter sees a periodic entry before the response
		// head as Envoy's does: code 0, below 100, left out; and the
		// start entry likewise.
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("CODED DownstreamEnd /slow 200\n"))
		Expect(s.Stdout()).To(ContainSubstring("CODED DownstreamPeriodic /slow 200\n"))
		Expect(s.Stdout()).NotTo(ContainSubstring("CODED DownstreamStart"))
		Expect(s.Stdout()).NotTo(MatchRegexp(`CODED \S+ /slow 0\n`))

		// The access log service gets the same entries, typed.
		Eventually(func() []datav3.AccessLogType {
			var got []datav3.AccessLogType
			for _, m := range collector.messages() {
				for _, e := range m.GetHttpLogs().GetLogEntry() {
					if e.GetRequest().GetPath() == "/slow" {
						got = append(got, e.GetCommonProperties().GetAccessLogType())
					}
				}
			}
			return got
		}, 5*time.Second).Should(And(
			HaveLen(len(lines)),
			HaveEach(BeElementOf(datav3.AccessLogType_DownstreamStart, datav3.AccessLogType_DownstreamPeriodic, datav3.AccessLogType_DownstreamEnd)),
			ContainElement(datav3.AccessLogType_DownstreamPeriodic),
			HaveExactElements(append(append([]any{datav3.AccessLogType_DownstreamStart},
				repeat(datav3.AccessLogType_DownstreamPeriodic, len(lines)-2)...), datav3.AccessLogType_DownstreamEnd)...)))
	})

	It("logs WebSocket and CONNECT tunnels once established, their bytes every interval, and at their end", func() {
		start(`access_log_options: {access_log_flush_interval: 0.1s, flush_log_on_tunnel_successfully_established: true}`)
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/chat", port), nil)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(resp.StatusCode).To(Equal(101))
		for i := range 4 {
			msg := fmt.Sprintf("message %d", i)
			Expect(c.WriteMessage(websocket.TextMessage, []byte(msg))).To(Succeed())
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, got, err := c.ReadMessage()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal("echo: " + msg))
			time.Sleep(150 * time.Millisecond)
		}
		// Periodic entries show the tunnel's bytes while it is open.
		Eventually(func() []aLogLine { return aLogLines(s.Stdout(), "/chat") }, 5*time.Second).Should(
			ContainElement(And(HaveField("Type", "DownstreamPeriodic"), HaveField("Code", 101), HaveField("Sent", BeNumerically(">", 0)))))
		Expect(c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))).To(Succeed())
		_, _, _ = c.ReadMessage()
		c.Close()
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`ALOG DownstreamEnd GET /chat 101 \d+ \d+ \d+ ws\n`))
		lines := aLogLines(s.Stdout(), "/chat")
		Expect(lines[0]).To(HaveField("Type", "DownstreamTunnelSuccessfullyEstablished"))
		Expect(lines[0].Code).To(Equal(101))
		expectPeriodicThenEnd(lines, []string{"DownstreamTunnelSuccessfullyEstablished"}, 3)

		// A CONNECT terminated at the proxy: established once its 200 is
		// sent.
		conn, r, status := rawConnect(port, "anywhere.example:443")
		Expect(status).To(HavePrefix("HTTP/1.1 200 "))
		echoThrough(conn, r, "ping over the tunnel")
		time.Sleep(350 * time.Millisecond)
		echoThrough(conn, r, "and again")
		Expect(conn.(*net.TCPConn).CloseWrite()).To(Succeed())
		_, err = r.ReadByte()
		Expect(err).To(MatchError(io.EOF))
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`ALOG DownstreamEnd CONNECT - 200 29 29 \d+ tunnel\n`))
		lines = aLogLines(s.Stdout(), "-")
		Expect(lines[0]).To(Equal(aLogLine{Type: "DownstreamTunnelSuccessfullyEstablished", Method: "CONNECT", Path: "-", Code: 200}))
		expectPeriodicThenEnd(lines, []string{"DownstreamTunnelSuccessfullyEstablished"}, 2)
		Expect(lines[len(lines)-2].Sent).To(BeNumerically(">=", 20), "a periodic entry after the first echo")
	})

	It("logs nothing more without the options, and takes the deprecated fields", func() {
		start(`access_log_flush_interval: 0.1s`)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(listenerURL(port, "/slow"))
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		Eventually(s.Stdout, 5*time.Second).Should(ContainSubstring("ALOG DownstreamEnd GET /slow 200 0 120 "))
		expectPeriodicThenEnd(aLogLines(s.Stdout(), "/slow"), nil, 3)
		Expect(s.Stdout()).NotTo(ContainSubstring("DownstreamStart"))
	})

	It("refuses both forms together, and intervals under 1ms, with their paths", func() {
		const hcm = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config."
		cfg := accessLogOptionsBootstrap(freePort(), 1, 2, 3, 4, `access_log_options: {flush_access_log_on_new_request: true}
          flush_access_log_on_new_request: true`)
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("flush_access_log_on_new_request: only one of flush_access_log_on_new_request or access_log_options can be specified"))
		r, _ = validate("b.yaml", strings.Replace(cfg, "flush_access_log_on_new_request: true\n", "access_log_flush_interval: 1s\n", 1))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("access_log_flush_interval: only one of access_log_flush_interval or access_log_options can be specified"))
		r, _ = validate("b.yaml", accessLogOptionsBootstrap(freePort(), 1, 2, 3, 4, `access_log_options: {access_log_flush_interval: 0.0005s}`))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(hcm + "access_log_options.access_log_flush_interval"))
		r, _ = validate("b.yaml", accessLogOptionsBootstrap(freePort(), 1, 2, 3, 4, `access_log_options: {access_log_flush_interval: 1s, flush_log_on_tunnel_successfully_established: true}`))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})

// repeat returns n copies of v.
func repeat(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}
