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
	return httpFilter("envoy.filters.http.fault", "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
		fmt.Sprintf("{abort: {http_status: %d, percentage: {numerator: 100}}}", status))
}

var _ = Describe("Upgrades: an upgrade type's own filter chain", func() {
	It("runs an upgrade through its type's filters instead of http_filters, and types without filters through http_filters", func() {
		wsUp, echoUp := startWebSocketEcho(), startTCPEcho(false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{stat_prefix: uf, upgrade_configs: [
				{upgrade_type: websocket, filters: [{name: envoy.filters.http.router}]},
				{upgrade_type: foo, filters: [` + faultAbort(451) + `, {name: envoy.filters.http.router}]},
				{upgrade_type: CONNECT}],
				access_log: [` + stdoutLog("UF %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `]}`,
			Routes: `[{match: {connect_matcher: {}}, route: {cluster: echo, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {}}]}},
				{match: {prefix: /}, route: {cluster: ws}}]`,
			Filters:  "[" + faultAbort(503) + "]",
			Clusters: []proxyCluster{{Name: "ws", Port: wsUp}, {Name: "echo", Port: echoUp}},
		}.YAML(), "--file-flush-interval-msec", "50")

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
		// cfg has upgrade type foo's filters fooFilters, a YAML flow list.
		cfg := func(fooFilters string) string {
			return proxySpec{
				Port:     freePort(),
				HCM:      "{stat_prefix: u, upgrade_configs: [{upgrade_type: websocket}, {upgrade_type: foo, filters: " + fooFilters + "}]}",
				Clusters: []proxyCluster{{Name: "c", Port: 1}},
			}.YAML()
		}
		r, _ := validate("b.yaml", cfg("["+faultAbort(451)+"]"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].filter_chains[0].filters[0].typed_config.upgrade_configs[1].filters[0]: the last filter must be the router, a terminal filter"))
		r, _ = validate("b.yaml", cfg("[{name: envoy.filters.http.router, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, start_child_span: true}}]"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("upgrade_configs[1].filters[0].typed_config.start_child_span: not supported by Outrigger in an upgrade's filter chain"))
		r, _ = validate("b.yaml", cfg("["+faultAbort(451)+", {name: envoy.filters.http.router}]"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})
})
