package compressor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	brcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	gzipcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	zcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	brlib "github.com/outrigger-dev/outrigger/pkg/proxy/compression/brotli"
	gzslib "github.com/outrigger-dev/outrigger/pkg/proxy/compression/gzip"
	zslib "github.com/outrigger-dev/outrigger/pkg/proxy/compression/zstd"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fromYAML decodes m from YAML, as users write configurations.
func fromYAML(t *testing.T, y string, m proto.Message) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, m); err != nil {
		t.Fatal(err)
	}
}

// compile compiles a Compressor from YAML as the filter named name.
func compile(t *testing.T, st *stats.Store, name, y string) (*filterConfig, error) {
	t.Helper()
	var p compressorv3.Compressor
	fromYAML(t, y, &p)
	cfg, err := Factory{}.Compile(&p, httpfilter.Context{
		Name: name, Stats: st, StatPrefix: "http.in.", Extensions: libraries(t), LookupByName: true,
		Runtime: noRuntime{},
	})
	if err != nil {
		return nil, err
	}
	return cfg.(*filterConfig), nil
}

// libraries is a registry of the compressor libraries.
func libraries(t *testing.T) *extension.Registry {
	r, err := extension.New(
		extension.Of(brlib.CompressorName, compression.CompressorCategory, &brcv3.Brotli{}, brlib.Compressor{}),
		extension.Of(gzslib.CompressorName, compression.CompressorCategory, &gzipcv3.Gzip{}, gzslib.Compressor{}),
		extension.Of(zslib.CompressorName, compression.CompressorCategory, &zcv3.Zstd{}, zslib.Compressor{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type noRuntime struct{}

func (noRuntime) Uint64(_ string, def uint64) uint64 { return def }

const gzipYAML = `
compressor_library:
  name: text
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
response_direction_config: {}
`

var body = bytes.Repeat([]byte("hello compressed world "), 200)

// respond runs one request through the filters: the request with the
// given Accept-Encoding (none when empty), a response with the given
// headers and body.
func respond(t *testing.T, cfgs []*filterConfig, accept string, status int, respHeaders []string, b []byte) (*httpfiltertest.Stream, []byte) {
	t.Helper()
	var hs []string
	if accept != "" {
		hs = []string{"accept-encoding", accept}
	}
	s := httpfiltertest.NewStream("GET", "/", hs...)
	var fs []*filter
	for _, c := range cfgs {
		f := c.NewFilter().(*filter)
		fs = append(fs, f)
		f.DecodeHeaders(s)
	}
	s.Status = status
	s.RespHeaders = httpfiltertest.NewHeaders(respHeaders...)
	s.RespBodyLen, s.RespHasBody = int64(len(b)), true
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i].EncodeHeaders(s)
	}
	out, _, err := s.EncodeBody(nil, b[:len(b)/2], b[len(b)/2:])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		f.OnDestroy()
	}
	return s, out
}

func decode(t *testing.T, enc string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case "gzip":
		zr, err := kgzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGzipResponse(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", gzipYAML)
	if err != nil {
		t.Fatal(err)
	}
	s, out := respond(t, []*filterConfig{c}, "gzip, deflate", 200, []string{"content-type", "text/plain; charset=utf-8", "etag", `"abc"`}, body)
	if ce, _ := s.RespHeaders.Get("content-encoding"); ce != "gzip" {
		t.Fatalf("content-encoding %q", ce)
	}
	if v, _ := s.RespHeaders.Get("vary"); v != "Accept-Encoding" {
		t.Errorf("vary %q", v)
	}
	if _, ok := s.RespHeaders.Get("etag"); ok {
		t.Error("a strong etag stayed")
	}
	if got := decode(t, "gzip", out); !bytes.Equal(got, body) {
		t.Error("the body does not decode to the original")
	}
	for name, want := range map[string]uint64{
		"http.in.compressor.text.gzip.response.compressed":               1,
		"http.in.compressor.text.gzip.header_compressor_used":            1,
		"http.in.compressor.text.gzip.response.total_uncompressed_bytes": uint64(len(body)),
		"http.in.compressor.text.gzip.response.total_compressed_bytes":   uint64(len(out)),
		"http.in.compressor.text.gzip.request.not_compressed":            1,
	} {
		if got := st.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestNotCompressed(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", gzipYAML)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, accept string
		status       int
		headers      []string
		body         []byte
		stat         string
	}{
		{"no accept-encoding", "", 200, []string{"content-type", "text/html"}, body, "no_accept_header"},
		{"identity", "identity", 200, []string{"content-type", "text/html"}, body, "header_identity"},
		{"gzip q=0", "gzip;q=0, identity", 200, []string{"content-type", "text/html"}, body, "header_not_valid"},
		{"identity preferred", "gzip;q=0.5, identity", 200, []string{"content-type", "text/html"}, body, "header_identity"},
		{"small", "gzip", 200, []string{"content-type", "text/html"}, []byte("tiny"), "response.content_length_too_small"},
		{"image", "gzip", 200, []string{"content-type", "image/png"}, body, "response.not_compressed"},
		{"already encoded", "gzip", 200, []string{"content-type", "text/html", "content-encoding", "br"}, body, "response.not_compressed"},
		{"no-transform", "gzip", 200, []string{"content-type", "text/html", "cache-control", "public, no-transform"}, body, "response.not_compressed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := st.Counter("http.in.compressor.text.gzip." + tc.stat).Value()
			s, out := respond(t, []*filterConfig{c}, tc.accept, tc.status, tc.headers, tc.body)
			if ce, _ := s.RespHeaders.Get("content-encoding"); ce == "gzip" {
				t.Fatal("compressed")
			}
			if !bytes.Equal(out, tc.body) {
				t.Error("the body changed")
			}
			if st.Counter("http.in.compressor.text.gzip."+tc.stat).Value() != before+1 {
				t.Errorf("%s not counted", tc.stat)
			}
		})
	}
}

func TestChooseAmongLibraries(t *testing.T) {
	st := stats.NewStore()
	var cfgs []*filterConfig
	for _, y := range []string{
		gzipYAML,
		`
compressor_library:
  name: br
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli
    quality: 5
response_direction_config: {}
`, `
compressor_library:
  name: z
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd
    compression_level: 3
    enable_checksum: true
response_direction_config: {}
`} {
		c, err := compile(t, st, "c", y)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	for accept, want := range map[string]string{
		"gzip":                       "gzip",
		"br":                         "br",
		"zstd":                       "zstd",
		"gzip;q=0.5, br;q=0.9, zstd": "zstd",
		"gzip;q=0.5, br;q=0.9":       "br",
		"*":                          "gzip",
		"gzip;q=0, *":                "br",
		"deflate":                    "",
		"gzip;q=0.8, identity;q=0.9": "",
	} {
		s, out := respond(t, cfgs, accept, 200, []string{"content-type", "application/json"}, body)
		got, _ := s.RespHeaders.Get("content-encoding")
		if got != want {
			t.Errorf("Accept-Encoding %q: content-encoding %q, want %q", accept, got, want)
			continue
		}
		if dec := decode(t, got, out); !bytes.Equal(dec, body) {
			t.Errorf("Accept-Encoding %q: the body does not decode to the original", accept)
		}
	}
}

func TestPerRoute(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", gzipYAML)
	if err != nil {
		t.Fatal(err)
	}
	var pr compressorv3.CompressorPerRoute
	fromYAML(t, `disabled: true`, &pr)
	rc, err := Factory{}.CompileRoute(&pr, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/", "accept-encoding", "gzip")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"gz": {rc}}
	f := c.NewFilter().(*filter)
	f.DecodeHeaders(s)
	s.Status, s.RespHeaders = 200, httpfiltertest.NewHeaders("content-type", "text/html")
	s.RespBodyLen, s.RespHasBody = 1000, true
	f.EncodeHeaders(s)
	if len(s.Encoders) != 0 {
		t.Error("a route with the filter disabled compressed")
	}
}

func TestRefused(t *testing.T) {
	for name, y := range map[string]string{
		"compressor_library.typed_config.dictionary": `
compressor_library:
  name: t
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd
    dictionary: {inline_string: abc}
`,
		"compressor_library: must be set": `{}`,
	} {
		_, err := compile(t, stats.NewStore(), "c", y)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func TestRequestDirection(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", `
compressor_library:
  name: up
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
request_direction_config:
  common_config: {min_content_length: 10}
`)
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("POST", "/", "content-type", "application/json")
	s.ReqBodyLen, s.ReqHasBody = int64(len(body)), true
	f := c.NewFilter().(*filter)
	f.DecodeHeaders(s)
	if ce, _ := s.ReqHeaders.Get("content-encoding"); ce != "gzip" {
		t.Fatalf("request content-encoding %q", ce)
	}
	out, err := s.DecodeBody(body[:100], body[100:])
	if err != nil {
		t.Fatal(err)
	}
	f.OnDestroy()
	if got := decode(t, "gzip", out); !bytes.Equal(got, body) {
		t.Error("the request body does not decode to the original")
	}
	if st.Counter("http.in.compressor.up.gzip.request.compressed").Value() != 1 {
		t.Error("request.compressed not counted")
	}
	// A short body, and one already encoded, are left alone.
	for _, hs := range [][]string{{"content-type", "text/plain"}, {"content-type", "text/plain", "content-encoding", "br"}} {
		s := httpfiltertest.NewStream("POST", "/", hs...)
		s.ReqBodyLen, s.ReqHasBody = 5, len(hs) == 2
		if len(hs) > 2 {
			s.ReqBodyLen = 1000
		}
		f := c.NewFilter().(*filter)
		f.DecodeHeaders(s)
		if len(s.Decoders) != 0 {
			t.Errorf("%v: compressed", hs)
		}
		f.OnDestroy()
	}
}

// TestDeprecatedFields checks that the top-level fields are read without
// response_direction_config, with the stats directly under the library.
func TestDeprecatedFields(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", `
compressor_library:
  name: old
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
content_length: 1000
content_type: [text/csv]
disable_on_etag_header: true
`)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := respond(t, []*filterConfig{c}, "gzip", 200, []string{"content-type", "text/csv"}, body)
	if ce, _ := s.RespHeaders.Get("content-encoding"); ce != "gzip" {
		t.Errorf("a %d-byte text/csv body was not compressed", len(body))
	}
	s, _ = respond(t, []*filterConfig{c}, "gzip", 200, []string{"content-type", "text/csv", "etag", `"x"`}, body)
	if ce, _ := s.RespHeaders.Get("content-encoding"); ce != "" {
		t.Error("compressed despite disable_on_etag_header")
	}
	respond(t, []*filterConfig{c}, "gzip", 200, []string{"content-type", "text/csv"}, body[:100])
	for name, want := range map[string]uint64{
		"http.in.compressor.old.gzip.compressed":               1,
		"http.in.compressor.old.gzip.not_compressed_etag":      1,
		"http.in.compressor.old.gzip.content_length_too_small": 1,
	} {
		if got := st.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// content_type_matcher decides instead of the default types: it sees the
// media type without parameters, in its case, and a bad regex is refused
// with its path.
func TestContentTypeMatcher(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", `
compressor_library:
  name: text
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
response_direction_config:
  common_config:
    content_type_matcher:
    - {prefix: "application/vnd.", ignore_case: true}
    - {exact: "text/csv"}
`)
	if err != nil {
		t.Fatal(err)
	}
	for ct, want := range map[string]bool{
		"application/vnd.api+json":               true,
		"Application/VND.api+json; charset=utf8": true,
		" text/csv ; header=present":             true,
		"TEXT/CSV":                               false, // exact is case sensitive
		"text/html":                              false, // not a default type any more
		"application/json":                       false,
	} {
		s, _ := respond(t, []*filterConfig{c}, "gzip", 200, []string{"content-type", ct}, body)
		ce, _ := s.RespHeaders.Get("content-encoding")
		if got := ce == "gzip"; got != want {
			t.Errorf("content-type %q: compressed %v, want %v", ct, got, want)
		}
	}
	_, err = compile(t, stats.NewStore(), "bad", `
compressor_library:
  name: text
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
request_direction_config:
  common_config:
    content_type_matcher:
    - {safe_regex: {regex: "("}}
`)
	if err == nil || !strings.Contains(err.Error(), "request_direction_config.common_config.content_type_matcher[0].safe_regex") {
		t.Errorf("bad regex: %v", err)
	}
}

func TestStatusHeader(t *testing.T) {
	statusYAML := func(encoding string) string {
		return `
compressor_library:
  name: ` + encoding + `
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.` + map[string]string{"gzip": "gzip", "br": "brotli"}[encoding] + `.compressor.v3.` + map[string]string{"gzip": "Gzip", "br": "Brotli"}[encoding] + `
response_direction_config:
  status_header_enabled: true
  disable_on_etag_header: true
  uncompressible_response_codes: [206]
`
	}
	gz, err := compile(t, stats.NewStore(), "gz", statusYAML("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	br, err := compile(t, stats.NewStore(), "br", statusYAML("br"))
	if err != nil {
		t.Fatal(err)
	}
	html := []string{"content-type", "text/html"}
	cases := []struct {
		name, accept string
		cfgs         []*filterConfig
		status       int
		headers      []string
		body         []byte
		want         string
	}{
		{"compressed, with the original length", "gzip", []*filterConfig{gz}, 200, html, body, fmt.Sprintf("gzip;Compressed;OriginalLength=%d", len(body))},
		{"too small", "gzip", []*filterConfig{gz}, 200, html, []byte("tiny"), "gzip;ContentLengthTooSmall"},
		{"content type", "gzip", []*filterConfig{gz}, 200, []string{"content-type", "image/png"}, body, "gzip;ContentTypeNotAllowed"},
		{"etag", "gzip", []*filterConfig{gz}, 200, append([]string{"etag", `"v1"`}, html...), body, "gzip;EtagNotAllowed"},
		{"status code", "gzip", []*filterConfig{gz}, 206, html, body, "gzip;StatusCodeNotAllowed"},
		{"a reason is given whatever the accept-encoding", "", []*filterConfig{gz}, 200, []string{"content-type", "image/png"}, body, "gzip;ContentTypeNotAllowed"},
		{"no reason of its own: no status", "identity", []*filterConfig{gz}, 200, html, body, ""},
		{"each filter appends its own", "br", []*filterConfig{gz, br}, 200, html, body, fmt.Sprintf("br;Compressed;OriginalLength=%d", len(body))},
		{"each filter appends its own, reasons too", "gzip", []*filterConfig{gz, br}, 200, html, []byte("tiny"), "br;ContentLengthTooSmall,gzip;ContentLengthTooSmall"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := respond(t, tc.cfgs, tc.accept, tc.status, tc.headers, tc.body)
			if got, _ := s.RespHeaders.Get("x-envoy-compression-status"); got != tc.want {
				t.Errorf("x-envoy-compression-status %q, want %q", got, tc.want)
			}
		})
	}
	// Without status_header_enabled, no header.
	plain, err := compile(t, stats.NewStore(), "gz", gzipYAML)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := respond(t, []*filterConfig{plain}, "gzip", 200, html, body)
	if v, ok := s.RespHeaders.Get("x-envoy-compression-status"); ok {
		t.Errorf("x-envoy-compression-status %q without status_header_enabled", v)
	}
}

// routeLibrary compiles a CompressorPerRoute whose overrides name a
// library of their own.
func routeLibrary(t *testing.T, y string) (httpfilter.RouteConfig, error) {
	t.Helper()
	var pr compressorv3.CompressorPerRoute
	fromYAML(t, y, &pr)
	return Factory{}.CompileRoute(&pr, httpfilter.Context{Extensions: libraries(t), LookupByName: true})
}

func TestPerRouteLibrary(t *testing.T) {
	st := stats.NewStore()
	c, err := compile(t, st, "gz", gzipYAML)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := routeLibrary(t, `
overrides:
  compressor_library:
    name: br-route
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli
      quality: 4
`)
	if err != nil {
		t.Fatal(err)
	}
	run := func(accept string) (*httpfiltertest.Stream, []byte) {
		s := httpfiltertest.NewStream("GET", "/", "accept-encoding", accept)
		s.PerRoute = map[string][]httpfilter.RouteConfig{"gz": {rc}}
		f := c.NewFilter().(*filter)
		f.DecodeHeaders(s)
		s.Status, s.RespHeaders = 200, httpfiltertest.NewHeaders("content-type", "text/html")
		s.RespBodyLen, s.RespHasBody = int64(len(body)), true
		f.EncodeHeaders(s)
		out, _, err := s.EncodeBody(nil, body[:100], body[100:])
		if err != nil {
			t.Fatal(err)
		}
		f.OnDestroy()
		return s, out
	}
	// The route offers brotli in place of the filter's gzip.
	s, out := run("br")
	if got, _ := s.RespHeaders.Get("content-encoding"); got != "br" {
		t.Fatalf("Accept-Encoding br on the route: content-encoding %q, want br", got)
	}
	if dec := decode(t, "br", out); !bytes.Equal(dec, body) {
		t.Error("the route's brotli body does not decode to the original")
	}
	// gzip is no longer offered on that route.
	s, out = run("gzip")
	if got, ok := s.RespHeaders.Get("content-encoding"); ok {
		t.Errorf("Accept-Encoding gzip on a brotli route: content-encoding %q, want none", got)
	}
	if !bytes.Equal(out, body) {
		t.Error("an uncompressed response's body changed")
	}
	// The filter's stats still count the route's responses.
	if n := st.Counter("http.in.compressor.text.gzip.response.compressed").Value(); n != 1 {
		t.Errorf("response.compressed = %d, want 1", n)
	}
	// Without a response_direction_config, the route's library does not
	// enable compression the filter's runtime flag has off.
	off, err := compile(t, st, "off", `
compressor_library:
  name: text
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip
response_direction_config:
  common_config:
    enabled: {default_value: false, runtime_key: off_key}
`)
	if err != nil {
		t.Fatal(err)
	}
	s2 := httpfiltertest.NewStream("GET", "/", "accept-encoding", "br")
	s2.PerRoute = map[string][]httpfilter.RouteConfig{"off": {rc}}
	f := off.NewFilter().(*filter)
	f.DecodeHeaders(s2)
	s2.Status, s2.RespHeaders = 200, httpfiltertest.NewHeaders("content-type", "text/html")
	s2.RespBodyLen, s2.RespHasBody = int64(len(body)), true
	f.EncodeHeaders(s2)
	if got, ok := s2.RespHeaders.Get("content-encoding"); ok {
		t.Errorf("a disabled filter compressed with the route's library: %q", got)
	}
}

func TestPerRouteLibraryInChain(t *testing.T) {
	// Two compressor filters, gzip and brotli; the route gives the gzip
	// one zstd. Accept-Encoding decides among zstd and br.
	st := stats.NewStore()
	gz, err := compile(t, st, "gz", gzipYAML)
	if err != nil {
		t.Fatal(err)
	}
	br, err := compile(t, st, "br", `
compressor_library:
  name: br
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli
response_direction_config: {}
`)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := routeLibrary(t, `
overrides:
  response_direction_config: {}
  compressor_library:
    name: z
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd
`)
	if err != nil {
		t.Fatal(err)
	}
	for accept, want := range map[string]string{
		"zstd":                 "zstd",
		"gzip":                 "",
		"br;q=0.5, zstd;q=0.9": "zstd",
		"br, zstd;q=0.2":       "br",
		"*":                    "zstd",
	} {
		s := httpfiltertest.NewStream("GET", "/", "accept-encoding", accept)
		s.PerRoute = map[string][]httpfilter.RouteConfig{"gz": {rc}}
		fs := []*filter{gz.NewFilter().(*filter), br.NewFilter().(*filter)}
		for _, f := range fs {
			f.DecodeHeaders(s)
		}
		s.Status, s.RespHeaders = 200, httpfiltertest.NewHeaders("content-type", "application/json")
		s.RespBodyLen, s.RespHasBody = int64(len(body)), true
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i].EncodeHeaders(s)
		}
		out, _, err := s.EncodeBody(nil, body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.RespHeaders.Get("content-encoding")
		if got != want {
			t.Errorf("Accept-Encoding %q: content-encoding %q, want %q", accept, got, want)
		} else if dec := decode(t, got, out); !bytes.Equal(dec, body) {
			t.Errorf("Accept-Encoding %q: the body does not decode to the original", accept)
		}
		for _, f := range fs {
			f.OnDestroy()
		}
	}
}

func TestPerRouteLibraryRefused(t *testing.T) {
	for want, y := range map[string]string{
		"overrides.compressor_library.typed_config: compressor library type envoy.extensions.compression.gzip.decompressor.v3.Gzip is not supported": `
overrides:
  compressor_library:
    name: wrong
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip
`,
		"overrides.compressor_library.typed_config.dictionary": `
overrides:
  compressor_library:
    name: t
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd
      dictionary: {inline_string: abc}
`,
	} {
		_, err := routeLibrary(t, y)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error containing %q", err, want)
		}
	}
}
