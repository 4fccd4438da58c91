package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// faultAbort is an HTTP filter that aborts every request with status.
func faultAbort(status int) string {
	return fmt.Sprintf(`{name: envoy.filters.http.fault, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, abort: {http_status: %d, percentage: {numerator: 100}}}}`, status)
}

var _ = Describe("Upgrades: an upgrade type's own filter chain", func() {
	It("runs an upgrade through its type's filters instead of http_filters, and types without filters through http_filters", func() {
		wsUp, echoUp := startWebSocketEcho(), startTCPEcho(false)
		port := freePort()
		s := Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters:
  - {name: ws, connect_timeout: 1s, load_assignment: {cluster_name: ws, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}
  - {name: echo, connect_timeout: 1s, load_assignment: {cluster_name: echo, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: uf
          upgrade_configs:
          - {upgrade_type: websocket, filters: [{name: envoy.filters.http.router}]}
          - {upgrade_type: foo, filters: [%s, {name: envoy.filters.http.router}]}
          - {upgrade_type: CONNECT}
          access_log:
          - name: envoy.access_loggers.stdout
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog
              log_format: {text_format_source: {inline_string: "UF %%REQ(:METHOD)%% %%REQ(:PATH)%% %%RESPONSE_CODE%% %%RESPONSE_FLAGS%%\n"}}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {connect_matcher: {}}, route: {cluster: echo, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {}}]}}
              - {match: {prefix: /}, route: {cluster: ws}}
          http_filters: [%s, {name: envoy.filters.http.router}]
`, wsUp, echoUp, port, faultAbort(451), faultAbort(503)), "--file-flush-interval-msec", "50")

		// An ordinary request runs http_filters: the fault aborts it.
		resp := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/plain"), nil, nil)
		Expect(resp.Status).To(Equal(503))

		// A WebSocket runs its own chain, the router alone.
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		c, wsResp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/chat", port), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(wsResp.StatusCode).To(Equal(101))
		Expect(c.WriteMessage(websocket.TextMessage, []byte("hi"))).To(Succeed())
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, got, err := c.ReadMessage()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("echo: hi"))
		c.Close()

		// An upgrade to foo runs foo's chain, whose fault answers 451.
		raw := dialTCP(port)
		_, err = io.WriteString(raw, "GET /foo HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: foo\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		fooResp, err := http.ReadResponse(bufio.NewReader(raw), &http.Request{Method: http.MethodGet})
		Expect(err).NotTo(HaveOccurred())
		Expect(fooResp.StatusCode).To(Equal(451))

		// CONNECT has no filters of its own: http_filters abort it.
		_, _, status := rawConnect(port, "anywhere.example:443")
		Expect(status).To(HavePrefix("HTTP/1.1 503 "))

		Eventually(s.Stdout, 5*time.Second).Should(And(
			ContainSubstring("UF GET /plain 503 FI\n"),
			ContainSubstring("UF GET /chat 101 -\n"),
			ContainSubstring("UF GET /foo 451 FI\n"),
			ContainSubstring("UF CONNECT - 503 FI\n")))
		Expect(strings.Count(s.Get("/stats?filter=downstream_cx_upgrades_total").Body, "http.uf.downstream_cx_upgrades_total: 3")).To(Equal(1))
	})

	It("refuses an upgrade chain that does not end with the router, with its path", func() {
		cfg := fmt.Sprintf(`
static_resources:
  clusters:
  - {name: c, connect_timeout: 1s, load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: u
          upgrade_configs: [{upgrade_type: websocket}, {upgrade_type: foo, filters: [%s]}]
          route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: c}}]}]}
          http_filters: [{name: envoy.filters.http.router}]
`, freePort(), faultAbort(451))
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].filter_chains[0].filters[0].typed_config.upgrade_configs[1].filters[0]: the last filter must be the router, a terminal filter"))
		r, _ = validate("b.yaml", strings.Replace(cfg, "filters: ["+faultAbort(451)+"]", "filters: [{name: envoy.filters.http.router, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, start_child_span: true}}]", 1))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("upgrade_configs[1].filters[0].typed_config.start_child_span: not supported by Outrigger in an upgrade's filter chain"))
		r, _ = validate("b.yaml", strings.Replace(cfg, "filters: ["+faultAbort(451)+"]", "filters: ["+faultAbort(451)+", {name: envoy.filters.http.router}]", 1))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})
