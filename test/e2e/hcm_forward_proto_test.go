package e2e

import (
	"bufio"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP connection manager forward_proto_config", func() {
	// start runs a proxy behind the proxy_protocol listener filter whose
	// upstream answers with the x-forwarded-proto it got.
	start := func(hcm string) int {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, r.Header.Get("X-Forwarded-Proto"))
		}), false)
		port := freePort()
		Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{listener_filters: [` + proxyProtocolFilter("") + `]}`,
			HCM:      "{stat_prefix: ingress" + hcm + "}",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		return port
	}
	// proto sends a request behind a PROXY header whose destination is
	// dst and returns the x-forwarded-proto the upstream got.
	proto := func(port int, dst string) string {
		GinkgoHelper()
		c := dialTCP(port)
		defer c.Close()
		_, err := c.Write(append(proxyV1("203.0.113.7:51000", dst), "GET / HTTP/1.1\r\nHost: fp\r\nConnection: close\r\n\r\n"...))
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}

	It("sets x-forwarded-proto from the PROXY protocol destination port it lists", func() {
		port := start(", forward_proto_config: {https_destination_ports: [443, 8443], http_destination_ports: [80]}")
		Expect(proto(port, "198.51.100.1:443")).To(Equal("https"))
		Expect(proto(port, "198.51.100.1:8443")).To(Equal("https"))
		Expect(proto(port, "198.51.100.1:80")).To(Equal("http"))
		Expect(proto(port, "198.51.100.1:9000")).To(Equal("http"), "a port of neither list: the connection's own scheme")
	})

	It("uses the connection's scheme without it", func() {
		port := start("")
		Expect(proto(port, "198.51.100.1:443")).To(Equal("http"))
	})
})
