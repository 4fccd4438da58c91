package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Listener filters: http_inspector", func() {
	It("chooses the filter chain by the HTTP version it detects, and lets other bytes through to a chain that matches any", func() {
		port := freePort()
		// The HTTP/1.0 chain's connection manager accepts HTTP/1.0 (it
		// refuses it by default); other bytes go to an echo chain.
		http10Chain := strings.Replace(directChain("http10 chain", `{application_protocols: [http/1.0]}`),
			`stat_prefix: "chain_http10_chain", `, `stat_prefix: "chain_http10_chain", http_protocol_options: {accept_http_10: true}, `, 1)
		echoChain := `{filters: [{name: envoy.filters.network.echo, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo}}]}`
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name: "hi", Port: port,
			Fields: `listener_filters: [{name: envoy.filters.listener.http_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector}}]`,
			Chains: []string{
				directChain("h2c chain", `{application_protocols: [h2c]}`),
				directChain("http11 chain", `{application_protocols: [http/1.1]}`),
				http10Chain,
				echoChain,
			},
		}))

		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		client := &http.Client{Transport: &http.Transport{Protocols: h2c}}
		resp, err := client.Get(listenerURL(port, "/"))
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.Proto).To(Equal("HTTP/2.0"))
		Expect(string(body)).To(Equal("h2c chain"))

		resp, err = http.Get(listenerURL(port, "/"))
		Expect(err).NotTo(HaveOccurred())
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).To(Equal("http11 chain"))

		c := dialTCP(port)
		_, err = c.Write([]byte("GET / HTTP/1.0\r\nHost: x\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		body, err = io.ReadAll(c)
		c.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(HaveSuffix("\r\n\r\nhttp10 chain"))

		// Not HTTP: the echo chain gets every byte, the inspector
		// consumed none.
		c = dialTCP(port)
		_, err = c.Write([]byte("\x00\x01binary\r\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		body, err = io.ReadAll(c)
		c.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal("\x00\x01binary\r\n"))

		Expect(statValue(s, "http_inspector.http2_found")).To(Equal("1"))
		Expect(statValue(s, "http_inspector.http11_found")).To(Equal("1"))
		Expect(statValue(s, "http_inspector.http10_found")).To(Equal("1"))
		Expect(statValue(s, "http_inspector.http_not_found")).To(Equal("1"))
		Expect(statValue(s, "http_inspector.read_error")).To(Equal("0"))
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.no_filter_chain_match", port))).To(Equal("0"))
	})

	It("closes a connection whose first line passes 64 KiB, counting read_error", func() {
		port := freePort()
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name: "hi", Port: port,
			Fields: `listener_filters: [{name: envoy.filters.listener.http_inspector}]`,
			Chains: []string{directChain("served", "")},
		}))
		c := dialTCP(port)
		defer c.Close()
		line := make([]byte, 64<<10)
		for i := range line {
			line[i] = 'a'
		}
		// The proxy may close (and reset) before the write's end: its
		// error says nothing; the close and the stat do.
		_, _ = c.Write(append([]byte("GET /"), line...))
		expectClosed(c)
		Eventually(func() string { return statValue(s, "http_inspector.read_error") }).Should(Equal("1"))
	})
})
