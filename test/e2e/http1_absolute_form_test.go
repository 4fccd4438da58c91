package e2e

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP/1.1 send_fully_qualified_url and ignore_http_11_upgrade", func() {
	It("writes the absolute-form target upstream with send_fully_qualified_url, the origin form otherwise", func() {
		up := startHeadUpstream()
		fq, plain := freePort(), freePort()
		side := func(name string, port int, h1 string) proxySpec {
			return proxySpec{
				Port: port, Listener: "{name: " + name + "}", HCM: "{stat_prefix: " + name + "}",
				Clusters: []proxyCluster{{Name: name, Port: up.port,
					Extra: httpProtocolOptions("{explicit_http_config: {http_protocol_options: {" + h1 + "}}}")}},
			}
		}
		p := side("fq", fq, "send_fully_qualified_url: true")
		p.More = []proxySpec{side("plain", plain, "")}
		Start(newDir(), p.YAML())
		const req = "GET /p?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"

		Expect(rawExchange(fq, req)).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		head := up.last()
		Expect(head).To(HavePrefix("GET http://example.com:8080/p?q=1 HTTP/1.1\r\n"))
		Expect(head).To(ContainSubstring("\r\nhost: example.com:8080\r\n"))

		Expect(rawExchange(plain, req)).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(up.last()).To(HavePrefix("GET /p?q=1 HTTP/1.1\r\n"))
	})

	It("serves an Upgrade that ignore_http_11_upgrade matches as a plain request, and refuses the others as before", func() {
		up := startHeadUpstream()
		port := freePort()
		Start(newDir(), proxySpec{
			Port:     port,
			HCM:      `{http_protocol_options: {ignore_http_11_upgrade: [{prefix: "tls/", ignore_case: true}]}}`,
			Clusters: []proxyCluster{{Name: "up", Port: up.port}},
		}.YAML())

		resp := rawExchange(port, "GET /a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: TLS/1.2\r\n\r\n")
		Expect(resp).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(strings.ToLower(resp)).NotTo(ContainSubstring("connection: close"), "the connection stays open, as for any request")
		head := strings.ToLower(up.last())
		Expect(head).To(HavePrefix("get /a http/1.1\r\n"))
		Expect(head).NotTo(ContainSubstring("\r\nupgrade:"))
		Expect(head).NotTo(ContainSubstring("\r\nconnection:"))

		// websocket is not in upgrade_configs and not ignored: 403.
		resp = rawExchange(port, "GET /b HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		Expect(resp).To(HavePrefix("HTTP/1.1 403 "))
	})
})
