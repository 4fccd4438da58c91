package e2e

import (
	"bufio"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// upstreamPPSocket is a cluster's transport_socket field (YAML flow) of
// the upstream PROXY protocol transport socket over raw_buffer, with the
// given fields (config and the options).
func upstreamPPSocket(fields string) string {
	return `transport_socket: {name: envoy.transport_sockets.upstream_proxy_protocol, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport, ` +
		fields + `, transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}}`
}

// ppGetter sends HTTP/1.1 GETs over one downstream connection that starts
// with a PROXY protocol header.
type ppGetter struct {
	c  net.Conn
	br *bufio.Reader
}

// newPPGetter connects to port and sends head (a PROXY header, or none).
func newPPGetter(port int, head []byte) *ppGetter {
	GinkgoHelper()
	c := dialTCP(port)
	if len(head) > 0 {
		_, err := c.Write(head)
		Expect(err).NotTo(HaveOccurred())
	}
	return &ppGetter{c: c, br: bufio.NewReader(c)}
}

// get sends one request and returns the response's body.
func (g *ppGetter) get() string {
	GinkgoHelper()
	_, err := g.c.Write([]byte("GET / HTTP/1.1\r\nHost: pp\r\n\r\n"))
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(g.br, nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(b))
	return string(b)
}

// ppGetOnce sends one request on a new downstream connection.
func ppGetOnce(port int, head []byte) string {
	GinkgoHelper()
	g := newPPGetter(port, head)
	defer g.c.Close()
	return g.get()
}

// ppAnswer is what startProxyHeaderHTTPServer answered, parsed.
type ppAnswer struct {
	header, tlvs, n, peer string
}

var ppAnswerRE = regexp.MustCompile(`^(.*?)(?: tlvs=([0-9a-f]*))? #(\d+) peer=(\S+)$`)

func parsePPAnswer(body string) ppAnswer {
	GinkgoHelper()
	m := ppAnswerRE.FindStringSubmatch(body)
	Expect(m).NotTo(BeNil(), body)
	return ppAnswer{header: m[1], tlvs: m[2], n: m[3], peer: m[4]}
}

// tlvHex is the hex of one TLV.
func tlvHex(typ byte, value string) string {
	return hex.EncodeToString(append([]byte{typ, byte(len(value) >> 8), byte(len(value))}, value...))
}

var _ = Describe("Upstream PROXY protocol transport socket pools", func() {
	It("keys HTTP/1.1 connections by the downstream TLVs with tlv_as_pool_key (by the addresses alone without), and renders format_string TLVs per connection", func() {
		up := startProxyHeaderHTTPServer()
		keyed, shared := freePort(), freePort()
		filter := `{listener_filters: [` + proxyProtocolFilter("pass_through_tlvs: {match_type: INCLUDE_ALL}") + `]`
		pass := `config: {version: V2, pass_through_tlvs: {match_type: INCLUDE_ALL}, added_tlvs: [{type: 0xF0, format_string: {text_format_source: {inline_string: "%DOWNSTREAM_LOCAL_ADDRESS%"}}}, {type: 0xE5, value: YWRkZWQ=}]}`
		s := Start(newDir(), proxySpec{
			Port:     keyed,
			Listener: filter + `, name: keyed}`,
			Clusters: []proxyCluster{{Name: "keyed", Port: up, Extra: `{` + upstreamPPSocket(pass+", tlv_as_pool_key: true") + `}`}},
			More: []proxySpec{{
				Port:     shared,
				Listener: filter + `, name: shared}`,
				Clusters: []proxyCluster{{Name: "shared", Port: up, Extra: `{` + upstreamPPSocket(pass) + `}`}},
			}},
		}.YAML())

		const addrs = "V2 PROXY 203.0.113.7:51000 198.51.100.1:80"
		blue := proxyV2("203.0.113.7:51000", "198.51.100.1:80", []byte("\xe0\x00\x04blue")...)
		red := proxyV2("203.0.113.7:51000", "198.51.100.1:80", []byte("\xe0\x00\x03red")...)
		// The downstream's TLV, the static added one, then the format
		// string's: the upstream connection's own local address, which the
		// upstream sees as its peer.
		want := func(a ppAnswer, color, n string) {
			GinkgoHelper()
			Expect(a.header).To(Equal(addrs))
			Expect(a.n).To(Equal(n))
			Expect(a.tlvs).To(Equal(tlvHex(0xE0, color) + tlvHex(0xE5, "added") + tlvHex(0xF0, a.peer)))
		}

		// get sends one request on a new downstream connection, then waits
		// until the proxy has released its upstream connection to the pool
		// (before it counts the request done), so that the next request
		// may have it.
		get := func(port int, cluster string, head []byte) ppAnswer {
			GinkgoHelper()
			a := parsePPAnswer(ppGetOnce(port, head))
			Eventually(func() string { return statValue(s, "cluster."+cluster+".upstream_rq_active") }).Should(Equal("0"))
			return a
		}
		first := get(keyed, "keyed", blue)
		want(first, "blue", "1")
		other := get(keyed, "keyed", red)
		want(other, "red", "1")
		Expect(other.peer).NotTo(Equal(first.peer))
		again := get(keyed, "keyed", blue)
		want(again, "blue", "2")
		Expect(again.peer).To(Equal(first.peer))
		Expect(statValue(s, "cluster.keyed.upstream_cx_total")).To(Equal("2"))

		// Without tlv_as_pool_key the same addresses share a connection,
		// whose header is the first user's, as in Envoy.
		want(get(shared, "shared", blue), "blue", "1")
		want(get(shared, "shared", red), "blue", "2")
		Expect(statValue(s, "cluster.shared.upstream_cx_total")).To(Equal("1"))
	})

	It("gives each downstream side its own HTTP/2 connection, whose header describes it", func() {
		up := startProxyHeaderHTTPServer()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{listener_filters: [` + proxyProtocolFilter("") + `]}`,
			Clusters: []proxyCluster{{Name: "h2", Port: up, Extra: `{` + upstreamPPSocket(`config: {version: V1}`) +
				`, typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http2_protocol_options: {}}}}}`}},
		}.YAML())

		a := newPPGetter(port, proxyV1("203.0.113.7:51000", "198.51.100.1:80"))
		b := newPPGetter(port, proxyV1("203.0.113.8:52000", "198.51.100.1:80"))
		a1 := parsePPAnswer(a.get())
		Expect(a1.header).To(Equal("PROXY TCP4 203.0.113.7 198.51.100.1 51000 80"))
		Expect(a1.n).To(Equal("1"))
		b1 := parsePPAnswer(b.get())
		Expect(b1.header).To(Equal("PROXY TCP4 203.0.113.8 198.51.100.1 52000 80"))
		Expect(b1.n).To(Equal("1"))
		Expect(b1.peer).NotTo(Equal(a1.peer))
		a2 := parsePPAnswer(a.get())
		Expect(a2.header).To(Equal(a1.header))
		Expect(a2.n).To(Equal("2"))
		Expect(a2.peer).To(Equal(a1.peer))
		Expect(statValue(s, "cluster.h2.upstream_cx_http2_total")).To(Equal("2"))
	})
})
