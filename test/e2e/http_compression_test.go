package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression/deflate"
)

// compressionBootstrap is a listener on port with three compressor
// filters (gzip, brotli, zstd), routing to the HTTP/1 upstream at up and
// (under /h2/) the h2c upstream at up2; /plain has compression disabled
// per route.
func compressionBootstrap(port int, up, up2 string) string {
	return compressionLibsBootstrap(port, up, up2, "{compression_level: COMPRESSION_LEVEL_6}", "{quality: 4}")
}

// compressionLibsBootstrap is compressionBootstrap with the given gzip and
// brotli library fields (YAML flow mappings).
func compressionLibsBootstrap(port int, up, up2, gzip, brotli string) string {
	GinkgoHelper()
	lib := func(typ, fields string) string {
		return httpFilter("envoy.filters.http.compressor", "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
			`{response_direction_config: {common_config: {min_content_length: 100, content_type: [text/plain, application/json]}},
			compressor_library: {name: text, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression."+typ, fields)+`}}`)
	}
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: web}",
		Routes: `[{match: {prefix: /plain}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.compressor: ` +
			withType("type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute", "{disabled: true}") + `}},
			{match: {prefix: /h2/}, route: {cluster: up2}},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: "[" + lib("gzip.compressor.v3.Gzip", gzip) + ", " + lib("brotli.compressor.v3.Brotli", brotli) + ", " +
			lib("zstd.compressor.v3.Zstd", "{compression_level: 3}") + "]",
		Clusters: []proxyCluster{
			{Name: "up", Port: portNum(up)},
			{Name: "up2", Port: portNum(up2), Extra: h2cOptions()},
		},
	}.YAML()
}

// compressible is the upstream's body: text that compresses well.
var compressible = strings.Repeat("Outrigger compresses what Envoy compresses. ", 500)

// compressionUpstream serves /small (a short text), /image (a PNG type),
// /etag (with a strong ETag) and anything else as compressible text; a
// request that arrives with Accept-Encoding is refused, since the proxy
// compresses.
func compressionUpstream(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/small"):
		w.Header().Set("content-type", "text/plain")
		_, _ = io.WriteString(w, "short")
		return
	case strings.HasSuffix(r.URL.Path, "/image"):
		w.Header().Set("content-type", "image/png")
	case strings.HasSuffix(r.URL.Path, "/etag"):
		w.Header().Set("etag", `"v1"`)
		w.Header().Set("content-type", "text/plain")
	default:
		w.Header().Set("content-type", "text/plain; charset=utf-8")
	}
	_, _ = io.WriteString(w, compressible)
}

// decodeBody decodes a body of the given content-encoding.
func decodeBody(encoding string, b []byte) string {
	GinkgoHelper()
	var r io.Reader
	switch encoding {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		Expect(err).NotTo(HaveOccurred())
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		Expect(err).NotTo(HaveOccurred())
		defer zr.Close()
		r = zr
	case "":
		return string(b)
	default:
		Fail("unexpected content-encoding " + encoding)
	}
	out, err := io.ReadAll(r)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// rawClients are httpClients that leave Accept-Encoding and the bodies
// alone (Go's transport otherwise asks for gzip and decodes it).
func rawClients() map[string]*http.Client {
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	return map[string]*http.Client{
		"HTTP/1.1": {Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true}},
		"HTTP/2":   {Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: h2c, DisableCompression: true}},
	}
}

var _ = Describe("The compressor filter", func() {
	var (
		sc   *Sidecar
		port int
	)

	BeforeEach(func() {
		up := httpTestUpstream(http.HandlerFunc(compressionUpstream), false)
		up2 := httpTestUpstream(http.HandlerFunc(compressionUpstream), true)
		port = freePort()
		sc = Start(newDir(), compressionBootstrap(port, up, up2))
	})

	get := func(c *http.Client, path, accept string) Response {
		GinkgoHelper()
		h := http.Header{}
		if accept != "" {
			h.Set("Accept-Encoding", accept)
		}
		return httpDo(c, http.MethodGet, listenerURL(port, path), nil, h)
	}

	It("serves curl --compressed a gzip body that decodes to the original", func() {
		out, err := exec.Command("curl", "-sS", "--max-time", "10", "--compressed", "-D", "-", listenerURL(port, "/text")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		head, body, ok := strings.Cut(string(out), "\r\n\r\n")
		Expect(ok).To(BeTrue())
		lower := strings.ToLower(head) + "\r\n"
		Expect(lower).To(ContainSubstring("content-encoding: gzip\r\n"))
		Expect(lower).To(ContainSubstring("vary: accept-encoding\r\n"))
		Expect(lower).To(ContainSubstring("transfer-encoding: chunked\r\n"))
		Expect(lower).NotTo(ContainSubstring("content-length"))
		Expect(body).To(Equal(compressible))
	})

	It("answers curl asking for br and zstd with them", func() {
		for _, enc := range []string{"br", "zstd"} {
			out, err := exec.Command("curl", "-sS", "--max-time", "10", "-H", "Accept-Encoding: "+enc,
				"--compressed", "-D", "-", listenerURL(port, "/text")).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
			head, body, _ := strings.Cut(string(out), "\r\n\r\n")
			Expect(strings.ToLower(head) + "\r\n").To(ContainSubstring("content-encoding: " + enc + "\r\n"))
			Expect(body).To(Equal(compressible))
		}
	})

	for proto, c := range rawClients() {
		It("negotiates gzip, br and zstd by q-value over "+proto+", from HTTP/1 and h2c upstreams", func() {
			for _, path := range []string{"/text", "/h2/text"} {
				for accept, want := range map[string]string{
					"gzip":                             "gzip",
					"br":                               "br",
					"zstd":                             "zstd",
					"gzip;q=0.5, br;q=0.9, zstd;q=0.7": "br",
					"gzip;q=0, *":                      "br",
					"*":                                "gzip",
					"identity":                         "",
					"deflate":                          "",
				} {
					r := get(c, path, accept)
					Expect(r.Status).To(Equal(http.StatusOK))
					Expect(r.Header.Get("Content-Encoding")).To(Equal(want), "%s with Accept-Encoding %q", path, accept)
					Expect(r.Header.Get("Vary")).To(Equal("Accept-Encoding"))
					Expect(decodeBody(want, []byte(r.Body))).To(Equal(compressible), "%s with Accept-Encoding %q", path, accept)
					if want != "" {
						Expect(len(r.Body)).To(BeNumerically("<", len(compressible)/4))
					}
				}
			}
		})

		It("leaves small bodies, other types, ETags and disabled routes alone over "+proto, func() {
			r := get(c, "/small", "gzip")
			Expect(r.Header.Get("Content-Encoding")).To(BeEmpty())
			Expect(r.Body).To(Equal("short"))
			r = get(c, "/image", "gzip")
			Expect(r.Header.Get("Content-Encoding")).To(BeEmpty())
			Expect(r.Header.Get("Vary")).To(BeEmpty())
			Expect(r.Body).To(Equal(compressible))
			r = get(c, "/plain", "gzip")
			Expect(r.Header.Get("Content-Encoding")).To(BeEmpty())
			Expect(r.Body).To(Equal(compressible))
			r = get(c, "/text", "")
			Expect(r.Header.Get("Content-Encoding")).To(BeEmpty())
			Expect(r.Body).To(Equal(compressible))
			// A strong ETag no longer names the bytes: it is dropped.
			r = get(c, "/etag", "gzip")
			Expect(r.Header.Get("Content-Encoding")).To(Equal("gzip"))
			Expect(r.Header.Get("ETag")).To(BeEmpty())
			Expect(decodeBody("gzip", []byte(r.Body))).To(Equal(compressible))
		})
	}

	It("counts with Envoy's stat names", func() {
		c := rawClients()["HTTP/1.1"]
		r := get(c, "/text", "gzip")
		Expect(r.Header.Get("Content-Encoding")).To(Equal("gzip"))
		get(c, "/small", "gzip")
		get(c, "/text", "")
		get(c, "/text", "identity")
		const p = "http.web.compressor.text.gzip."
		Expect(httpStat(sc, p+"response.compressed")).To(Equal("1"))
		Expect(httpStat(sc, p+"response.not_compressed")).To(Equal("3"))
		Expect(httpStat(sc, p+"response.content_length_too_small")).To(Equal("1"))
		Expect(httpStat(sc, p+"no_accept_header")).To(Equal("1"))
		Expect(httpStat(sc, p+"header_identity")).To(Equal("1"))
		Expect(httpStat(sc, p+"header_compressor_used")).To(Equal("1"))
		Expect(httpStat(sc, p+"response.total_uncompressed_bytes")).To(Equal(fmt.Sprint(len(compressible))))
		Expect(httpStat(sc, p+"response.total_compressed_bytes")).To(Equal(fmt.Sprint(len(r.Body))))
		Expect(httpStat(sc, "http.web.compressor.text.brotli.header_compressor_overshadowed")).To(Equal("1"))
	})
})

// decompressionBootstrap is a listener on port with a gzip decompressor
// filter (max_inflate_ratio 400) in front of the upstream at up.
func decompressionBootstrap(port int, up string) string {
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: web}",
		Filters: "[" + httpFilter("envoy.filters.http.decompressor", "type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor",
			`{decompressor_library: {name: body, typed_config: `+
				withType("type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip", "{max_inflate_ratio: 400}")+`}}`) + "]",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
	}.YAML()
}

// gzipOf compresses s.
func gzipOf(s string) []byte {
	GinkgoHelper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := io.WriteString(w, s)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.Close()).To(Succeed())
	return b.Bytes()
}

var _ = Describe("The decompressor filter", func() {
	var (
		sc   *Sidecar
		port int
	)

	BeforeEach(func() {
		// The upstream answers with what it received: the request's
		// Content-Encoding and Accept-Encoding, and the body's length and
		// whether it is the expected text; /gzipped answers in gzip.
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/gzipped" {
				w.Header().Set("content-encoding", "gzip")
				_, _ = w.Write(gzipOf(compressible))
				return
			}
			b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "ce=%q ae=%q len=%d same=%v", r.Header.Get("Content-Encoding"), r.Header.Get("Accept-Encoding"),
				len(b), string(b) == compressible)
		}), false)
		port = freePort()
		sc = Start(newDir(), decompressionBootstrap(port, up))
	})

	for proto, c := range rawClients() {
		It("hands the upstream gzip request bodies decoded, over "+proto, func() {
			z := gzipOf(compressible)
			h := http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"text/plain"}}
			r := httpDo(c, http.MethodPost, listenerURL(port, "/upload"), bytes.NewReader(z), h)
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(r.Body).To(Equal(fmt.Sprintf(`ce="" ae="gzip" len=%d same=true`, len(compressible))))
			Expect(httpStat(sc, "http.web.decompressor.body.gzip.request.decompressed")).To(Equal("1"))
			Expect(httpStat(sc, "http.web.decompressor.body.gzip.request.total_compressed_bytes")).To(Equal(fmt.Sprint(len(z))))
			Expect(httpStat(sc, "http.web.decompressor.body.gzip.request.total_uncompressed_bytes")).To(Equal(fmt.Sprint(len(compressible))))

			// Another coding passes as it came.
			r = httpDo(c, http.MethodPost, listenerURL(port, "/upload"), strings.NewReader("plain"), http.Header{"Content-Encoding": {"br"}})
			Expect(r.Body).To(Equal(`ce="br" ae="gzip" len=5 same=false`))
			Expect(httpStat(sc, "http.web.decompressor.body.gzip.request.not_decompressed")).To(Equal("1"))
		})

		It("decodes a gzip response for a client that did not ask for it, over "+proto, func() {
			r := httpDo(c, http.MethodGet, listenerURL(port, "/gzipped"), nil, nil)
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(r.Header.Get("Content-Encoding")).To(BeEmpty())
			Expect(r.Body).To(Equal(compressible))
			Expect(httpStat(sc, "http.web.decompressor.body.gzip.response.decompressed")).To(Equal("1"))
		})
	}

	It("cuts a gzip bomb at max_inflate_ratio and counts it", func() {
		const size = 32 << 20
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, err := w.Write(make([]byte, size))
		Expect(err).NotTo(HaveOccurred())
		Expect(w.Close()).To(Succeed())
		bomb := b.Bytes()
		r := httpDo(rawClients()["HTTP/1.1"], http.MethodPost, listenerURL(port, "/upload"), bytes.NewReader(bomb),
			http.Header{"Content-Encoding": {"gzip"}})
		Expect(r.Status).To(Equal(http.StatusOK))
		var n int
		_, err = fmt.Sscanf(r.Body[strings.Index(r.Body, "len="):], "len=%d", &n)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeNumerically("<=", 400*len(bomb)), "the upstream received %d bytes from a %d-byte bomb", n, len(bomb))
		Expect(n).To(BeNumerically("<", size))
		Expect(httpStat(sc, "http.web.decompressor.body.gzip.decompressor_library.zlib_data_error")).To(Equal("1"))
	})
})

var _ = Describe("The compressor filter's content_type_matcher", func() {
	It("compresses the content types its matchers take, and no default type", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("content-type", r.URL.Query().Get("ct"))
			_, _ = io.WriteString(w, compressible)
		}), false)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Filters: "[" + httpFilter("envoy.filters.http.compressor", "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
				`{response_direction_config: {common_config: {content_type_matcher: [{prefix: "application/vnd.", ignore_case: true}, {safe_regex: {regex: "text/(csv|tab-separated-values)"}}]}},
				compressor_library: {name: text, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip", "{}")+`}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		for ct, want := range map[string]bool{
			"application/vnd.api+json":        true,
			"Application/Vnd.Api+json":        true,
			"text/csv; charset=utf-8":         true,
			"text/tab-separated-values":       true,
			"text/html":                       false,
			"application/json; charset=utf-8": false,
		} {
			out, err := exec.Command("curl", "-sS", "--max-time", "10", "--compressed", "-D", "-",
				"-G", "--data-urlencode", "ct="+ct, listenerURL(port, "/")).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
			head, body, _ := strings.Cut(string(out), "\r\n\r\n")
			Expect(strings.Contains(strings.ToLower(head), "content-encoding: gzip")).To(Equal(want), "content-type %q: %s", ct, head)
			Expect(body).To(Equal(compressible))
		}
	})
})

var _ = Describe("The compression filters' configuration", func() {
	It("refuses what the libraries cannot do, with its path", func() {
		const p = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters"
		cfg := compressionLibsBootstrap(freePort(), "127.0.0.1:1", "127.0.0.1:2", "{memory_level: 3, window_bits: 10}", "{encoder_mode: TEXT}")
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(p + "[1].typed_config.compressor_library.typed_config.encoder_mode: TEXT is not supported by Outrigger"))
		Expect(r.Stderr).NotTo(ContainSubstring("memory_level"))
		Expect(r.Stderr).NotTo(ContainSubstring("window_bits"))
	})
})

// zlibBlock is 2 KB of JSON-ish text with little repetition inside it:
// repeated, it compresses far only if the window reaches back 2 KB.
func zlibBlock() string {
	var b strings.Builder
	x := uint32(7)
	for b.Len() < 2000 {
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, `{"id":%d,"v":"%08x"},`, x>>20, x)
	}
	return b.String()[:2000]
}

var _ = Describe("The gzip compressor with zlib's window and memory level", func() {
	It("serves the gzip sandbox's configuration to curl --compressed, with a window of 2^window_bits", func() {
		body := "[" + strings.Repeat(zlibBlock(), 40) + "{}]"
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("content-type", "application/json")
			_, _ = io.WriteString(w, body)
		}), false)
		// Envoy's gzip sandbox's compressor.
		compressor := func(name, gz string) string {
			return httpFilter(name, "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
				`{response_direction_config: {common_config: {min_content_length: 100, content_type: [application/json]}, disable_on_etag_header: true},
				compressor_library: {name: text_optimized, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip", gz)+`}}`)
		}
		port := freePort()
		sc := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: ingress_http}",
			Routes:   `[{match: {prefix: /}, route: {cluster: service}}]`,
			Filters:  "[" + compressor("envoy.filters.http.compressor", "{memory_level: 3, window_bits: 10}") + "]",
			Clusters: []proxyCluster{{Name: "service", Port: portNum(up)}},
		}.YAML())

		out, err := exec.Command("curl", "-sS", "--max-time", "10", "--compressed", "-D", "-", listenerURL(port, "/")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		head, got, ok := strings.Cut(string(out), "\r\n\r\n")
		Expect(ok).To(BeTrue())
		Expect(strings.ToLower(head)).To(ContainSubstring("content-encoding: gzip\r\n"))
		Expect(got).To(Equal(body))

		// The 1 KiB window cannot reach the repeats 2 KB back: the body
		// compresses by its letters only, not 40 times over.
		r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, http.Header{"Accept-Encoding": {"gzip"}})
		Expect(r.Header.Get("Content-Encoding")).To(Equal("gzip"))
		Expect(decodeBody("gzip", []byte(r.Body))).To(Equal(body))
		Expect(len(r.Body)).To(BeNumerically(">", len(body)/5), "%d bytes out of %d: matches reached past the window", len(r.Body), len(body))
		Expect(httpStat(sc, "http.ingress_http.compressor.text_optimized.gzip.response.compressed")).To(Equal("2"))
	})
})

var _ = Describe("The gzip decompressor with zlib's window", func() {
	It("decodes uploads compressed within window_bits and refuses matches past it, as the gzip sandbox configures it", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
			fmt.Fprintf(w, "len=%d", len(b))
		}), false)
		port := freePort()
		// The sandbox's decompressor: window_bits 9, chunk_size 8192,
		// max_inflate_ratio 1000.
		sc := Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Filters: "[" + httpFilter("envoy.filters.http.decompressor", "type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor",
				`{decompressor_library: {name: upload, typed_config: `+
					withType("type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip", "{window_bits: 9, chunk_size: 8192, max_inflate_ratio: 1000}")+`}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		body := strings.Repeat(zlibBlock(), 40)
		upload := func(z []byte) string {
			r := httpDo(rawClients()["HTTP/1.1"], http.MethodPost, listenerURL(port, "/upload"), bytes.NewReader(z), http.Header{"Content-Encoding": {"gzip"}})
			Expect(r.Status).To(Equal(http.StatusOK))
			return r.Body
		}

		// zlib's deflate with a 512-byte window: every match within it.
		var small bytes.Buffer
		gw, err := deflate.NewGzipWriter(&small, deflate.Options{Level: 6, MemLevel: 8, WindowBits: 9})
		Expect(err).NotTo(HaveOccurred())
		_, err = io.WriteString(gw, body)
		Expect(err).NotTo(HaveOccurred())
		Expect(gw.Close()).To(Succeed())
		Expect(upload(small.Bytes())).To(Equal(fmt.Sprintf("len=%d", len(body))))
		Expect(httpStat(sc, "http.web.decompressor.upload.gzip.request.decompressed")).To(Equal("1"))
		Expect(httpStat(sc, "http.web.decompressor.upload.gzip.decompressor_library.zlib_data_error")).To(Equal("0"))

		// Go's gzip with its 32 KiB window reaches the repeats 2 KB back:
		// zlib's inflate with window_bits 9 stops at the first such match.
		got := upload(gzipOf(body))
		var n int
		_, err = fmt.Sscanf(got, "len=%d", &n)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeNumerically("<", len(body)))
		Expect(httpStat(sc, "http.web.decompressor.upload.gzip.decompressor_library.zlib_data_error")).To(Equal("1"))
	})
})
