package e2e

import (
	"fmt"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Listener filters: http_inspector", func() {
	It("chooses the filter chain by the HTTP version it detects, and lets other bytes through to a chain that matches any", func() {
		port := freePort()
		// HTTP/1.0 goes to an echo chain (the connection manager would
		// refuse HTTP/1.0 by default), the rest to a direct response.
		echoChain := `{filter_chain_match: {application_protocols: [http/1.0]}, filters: [{name: envoy.filters.network.echo, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo}}]}`
		otherChain := `{filters: [{name: envoy.filters.network.direct_response, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.direct_response.v3.Config, response: {inline_string: "not http"}}}]}`
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name: "hi", Port: port,
			Fields: `listener_filters: [{name: envoy.filters.listener.http_inspector, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector}}]`,
			Chains: []string{
				directChain("h2c chain", `{application_protocols: [h2c]}`),
				directChain("http11 chain", `{application_protocols: [http/1.1]}`),
				echoChain,
				otherChain,
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

		// The echo chain gets every byte: the inspector consumed none.
		talk := func(b string) string {
			GinkgoHelper()
			c := dialTCP(port)
			defer c.Close()
			_, err := c.Write([]byte(b))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.CloseWrite()).To(Succeed())
			got, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			return string(got)
		}
		Expect(talk("GET / HTTP/1.0\r\nHost: x\r\n\r\n")).To(Equal("GET / HTTP/1.0\r\nHost: x\r\n\r\n"))
		Expect(talk("\x00\x01binary\r\n")).To(Equal("not http"))

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
		_, err := c.Write(append([]byte("GET /"), line...))
		Expect(err).NotTo(HaveOccurred())
		expectClosed(c)
		Eventually(func() string { return statValue(s, "http_inspector.read_error") }).Should(Equal("1"))
	})
})
