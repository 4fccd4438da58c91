package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP connection manager add_proxy_protocol_connection_state", func() {
	// start runs a proxy whose cluster sends a v1 PROXY header upstream
	// to a server that answers with the header it got; it returns the
	// listener's port and the upstream's.
	start := func(hcm string) (int, int) {
		up := startTCPServer(proxyHeaderHTTP)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: ingress" + hcm + "}",
			Clusters: []proxyCluster{{Name: "up", Port: up, Extra: `transport_socket: {name: envoy.transport_sockets.upstream_proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport, ` +
				`config: {version: V1}, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}`}},
		}.YAML())
		return port, up
	}
	// get sends a request on a new connection and returns the body and
	// the client's port.
	get := func(port int) (string, int) {
		GinkgoHelper()
		c := dialTCP(port)
		defer c.Close()
		_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: pp\r\nConnection: close\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return string(b), portNum(c.LocalAddr().String())
	}

	It("describes the client's connection in the upstream PROXY header by default", func() {
		port, _ := start("")
		body, client := get(port)
		Expect(body).To(Equal(fmt.Sprintf("PROXY TCP4 127.0.0.1 127.0.0.1 %d %d #1", client, port)))
	})

	It("leaves the header to describe the upstream connection itself when false", func() {
		port, up := start(", add_proxy_protocol_connection_state: false")
		body, client := get(port)
		Expect(body).To(MatchRegexp(`^PROXY TCP4 127\.0\.0\.1 127\.0\.0\.1 \d+ %d #1$`, up))
		Expect(body).NotTo(ContainSubstring(fmt.Sprintf(" %d ", client)))
	})
})
