package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("TCP proxy tunneling_config request id and response headers", func() {
	It("sends a request id on each tunnel request, and logs it with the tunnel's response headers", func() {
		seen := make(chan string, 2)
		up := startTCPServer(func(c *net.TCPConn) {
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			seen <- req.Header.Get("X-Tunnel-Id")
			_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\nX-Proxy: p1\r\n\r\n")
			_, _ = io.Copy(c, br)
			_ = c.CloseWrite()
		})
		port := freePort()
		cfg := tcpBootstrap(port, `cluster: proxy, tunneling_config: {hostname: "db.internal:5432", propagate_response_headers: true, request_id_header: x-tunnel-id, request_id_metadata_key: rid, request_id_extension: {typed_config: {"@type": type.googleapis.com/envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig}}}`,
			tcpCluster("proxy", up))
		cfg = strings.Replace(cfg, `TCPLOG %UPSTREAM_CLUSTER%`, `TCPLOG %DYNAMIC_METADATA(envoy.filters.network.tcp_proxy:rid)% %FILTER_STATE(envoy.tcp_proxy.propagate_response_headers:TYPED)% %UPSTREAM_CLUSTER%`, 1)
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		for range 2 {
			c := dialTCP(port)
			_, err := c.Write([]byte("hi"))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.CloseWrite()).To(Succeed())
			got, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(got)).To(Equal("hi"))
		}
		var ids []string
		for range 2 {
			var id string
			Expect(seen).To(Receive(&id))
			Expect(id).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`))
			ids = append(ids, id)
		}
		Expect(ids[0]).NotTo(Equal(ids[1]))
		for _, id := range ids {
			Eventually(s.Stdout).Should(MatchRegexp(`TCPLOG ` + regexp.QuoteMeta(id) + ` \{"headers":\[\{"key":":status","value":"200"\},\{"key":"x-proxy","value":"p1"\}\]\} proxy `))
		}
	})

	It("closes a proxied connection that moves bytes once its listener drains, with check_drain_close", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, `cluster: echo, check_drain_close: true`, tcpCluster("echo", up)))
		c := dialTCP(port)
		expectEcho(c)
		// /healthcheck/fail drains a listener with the default drain_type.
		Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
		_, err := c.Write([]byte("x"))
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.ReadAll(c) // the echo may come back before the close
		Expect(statValue(s, "tcp.front.downstream_cx_drain_close")).To(Equal("1"))
	})
})
