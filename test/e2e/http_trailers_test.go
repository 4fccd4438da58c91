package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// trailerEcho answers with the request trailer x-req-t as the upstream got
// it ("got=" then its value, empty when none came) and ends the response
// with the trailer x-resp-t: r1. The head is flushed before the body so
// that the response has no content-length and HTTP/1.1 carries it chunked.
func trailerEcho(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Trailer", "X-Resp-T")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	fmt.Fprintf(w, "got=%s", r.Trailer.Get("X-Req-T"))
	w.Header().Set("X-Resp-T", "r1")
}

// trailersBootstrap has two listeners, "on" with the connection manager's
// enable_trailers and "off" without, each routing /h1on to an HTTP/1.1
// cluster with enable_trailers, /h1off to one without and /h2 to an h2c
// cluster.
func trailersBootstrap(on, off int, h1Up, h2Up string) string {
	routes := `[{match: {prefix: /h1on}, route: {cluster: h1on}},
		{match: {prefix: /h1off}, route: {cluster: h1off}},
		{match: {prefix: /h2}, route: {cluster: h2}}]`
	spec := proxySpec{
		Port: on, Listener: "{name: enabled}", Routes: routes,
		HCM: "{stat_prefix: enabled, http_protocol_options: {enable_trailers: true}}",
		Clusters: []proxyCluster{
			{Name: "h1on", Port: portNum(h1Up), Extra: httpProtocolOptions("{explicit_http_config: {http_protocol_options: {enable_trailers: true}}}")},
			{Name: "h1off", Port: portNum(h1Up)},
			{Name: "h2", Port: portNum(h2Up), Extra: h2cOptions()},
		},
	}
	spec.More = []proxySpec{{Port: off, Listener: "{name: plain}", Routes: routes, HCM: "{stat_prefix: plain}"}}
	return spec.YAML()
}

// rawChunkedExchange sends request (a raw HTTP/1.1 request) to port and
// reads the response with Go's parser, which keeps a chunked body's
// trailers: it returns the body and the trailers.
func rawChunkedExchange(port int, request string) (string, http.Header) {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, request)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(200), "body: %s", body)
	return string(body), resp.Trailer
}

// h2TrailerExchange posts a body ended by the trailer x-req-t: v2 over h2c
// and returns the response body and trailers.
func h2TrailerExchange(port int, path string) (string, http.Header) {
	GinkgoHelper()
	client := httpClients()["HTTP/2"]
	req, err := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), strings.NewReader("hello"))
	Expect(err).NotTo(HaveOccurred())
	req.ContentLength = -1
	req.Trailer = http.Header{"X-Req-T": {"v2"}}
	resp, err := client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.ProtoMajor).To(Equal(2))
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(200), "body: %s", body)
	return string(body), resp.Trailer
}

var _ = Describe("HTTP trailers", func() {
	// The head declares the trailer, which Go's HTTP/2 server requires
	// before it keeps one.
	const chunkedWithTrailer = "POST %s HTTP/1.1\r\nhost: example.com\r\ntrailer: x-req-t\r\ntransfer-encoding: chunked\r\n\r\n" +
		"5\r\nhello\r\n0\r\nx-req-t: v1\r\n\r\n"
	var on, off int

	BeforeEach(func() {
		h1Up := httpTestUpstream(http.HandlerFunc(trailerEcho), false)
		h2Up := httpTestUpstream(http.HandlerFunc(trailerEcho), true)
		on, off = freePort(), freePort()
		Start(newDir(), trailersBootstrap(on, off, h1Up, h2Up))
	})

	It("carries HTTP/1.1 trailers both ways where enable_trailers is set on both sides, and drops them where it is not", func() {
		for _, tc := range []struct {
			port          int
			path, got, tr string
		}{
			// HTTP/1.1 to HTTP/1.1 and HTTP/2, both sides enabled.
			{on, "/h1on", "got=v1", "r1"},
			{on, "/h2", "got=v1", "r1"},
			// The cluster drops them (request not sent, response not
			// read).
			{on, "/h1off", "got=", ""},
			// The connection manager drops them.
			{off, "/h1on", "got=", ""},
			{off, "/h2", "got=", ""},
		} {
			body, trailers := rawChunkedExchange(tc.port, fmt.Sprintf(chunkedWithTrailer, tc.path))
			Expect(body).To(Equal(tc.got), "%s on port %d", tc.path, tc.port)
			Expect(trailers.Get("X-Resp-T")).To(Equal(tc.tr), "%s on port %d: trailers %v", tc.path, tc.port, trailers)
		}
	})

	It("carries HTTP/2 request and response trailers to HTTP/2 upstreams, and to HTTP/1.1 ones with the cluster's enable_trailers", func() {
		for _, port := range []int{on, off} {
			for _, tc := range []struct{ path, got, tr string }{
				{"/h2", "got=v2", "r1"},
				{"/h1on", "got=v2", "r1"},
				{"/h1off", "got=", ""},
			} {
				body, trailers := h2TrailerExchange(port, tc.path)
				Expect(body).To(Equal(tc.got), "%s on port %d", tc.path, port)
				Expect(trailers.Get("X-Resp-T")).To(Equal(tc.tr), "%s on port %d: trailers %v", tc.path, port, trailers)
			}
		}
	})

	It("answers 400 to malformed HTTP/1.1 request trailers with enable_trailers", func() {
		head := rawExchange(on, "POST /h1on HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n"+
			"5\r\nhello\r\n0\r\nbad name: v\r\n\r\n")
		Expect(head).To(HavePrefix("HTTP/1.1 400 "))
	})

	It("copies HTTP/2 request trailers to HTTP/2 shadows", func() {
		shadow, seen := shadowRecorder(200, true)
		main := httpTestUpstream(http.HandlerFunc(trailerEcho), true)
		port := freePort()
		Start(newDir(), proxySpec{
			Port:   port,
			Routes: `[{match: {prefix: /}, route: {cluster: main, request_mirror_policies: [{cluster: shadow}]}}]`,
			Clusters: []proxyCluster{
				{Name: "main", Port: portNum(main), Extra: h2cOptions()},
				{Name: "shadow", Port: portNum(shadow), Extra: h2cOptions()},
			},
		}.YAML())
		body, trailers := h2TrailerExchange(port, "/m")
		Expect(body).To(Equal("got=v2"))
		Expect(trailers.Get("X-Resp-T")).To(Equal("r1"))
		got := nextShadow(seen)
		Expect(got.body).To(Equal("hello"))
		Expect(got.trailer.Get("X-Req-T")).To(Equal("v2"))
	})

	It("adds the decompressor's byte counts to the request's trailers for an HTTP/2 upstream", func() {
		seen := make(chan http.Header, 1)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			seen <- r.Trailer.Clone()
			fmt.Fprintf(w, "%s", b)
		}), true)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Filters: "[" + httpFilter("envoy.filters.http.decompressor", "type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor",
				`{decompressor_library: {name: body, typed_config: `+
					withType("type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip", "{}")+`}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up), Extra: h2cOptions()}},
		}.YAML())
		compressed := gzipOf("hello, trailers")
		r := httpDo(httpClients()["HTTP/2"], "POST", listenerURL(port, "/d"), bytes.NewReader(compressed), http.Header{
			"Content-Encoding": {"gzip"},
			// Go's HTTP/2 server keeps only the trailers a request
			// declares.
			"Trailer": {"x-envoy-decompressor-body-compressed-bytes, x-envoy-decompressor-body-uncompressed-bytes"},
		})
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("hello, trailers"))
		var got http.Header
		Eventually(seen, 5*time.Second).Should(Receive(&got))
		Expect(got.Get("X-Envoy-Decompressor-Body-Compressed-Bytes")).To(Equal(fmt.Sprint(len(compressed))))
		Expect(got.Get("X-Envoy-Decompressor-Body-Uncompressed-Bytes")).To(Equal("15"))
	})
})
