package httpconn

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	gzipcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	gzipdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/decompressor/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	decompressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/decompressor/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestBodyTransforms runs a compressor and a decompressor (in that order:
// the response meets the decompressor first), which
// transform both bodies, over both downstream and both upstream
// protocols: the upstream gets the request body decoded (chunked or in
// DATA frames, without Content-Length), the client the response
// compressed.
func TestBodyTransforms(t *testing.T) {
	// Numbered lines: compressible, but well under the decompressor's
	// default max_inflate_ratio of 100.
	var lines strings.Builder
	for i := range 600 {
		fmt.Fprintf(&lines, "line %d, transformed both ways\n", i*7919%10007)
	}
	text := lines.String()
	var zbody bytes.Buffer
	zw := gzip.NewWriter(&zbody)
	_, _ = io.WriteString(zw, text)
	_ = zw.Close()

	decomp := filter("decomp", &decompressorv3.Decompressor{DecompressorLibrary: &corev3.TypedExtensionConfig{
		Name: "in", TypedConfig: typed(&gzipdv3.Gzip{})}})
	comp := filter("comp", &compressorv3.Compressor{
		CompressorLibrary:       &corev3.TypedExtensionConfig{Name: "out", TypedConfig: typed(&gzipcv3.Gzip{})},
		ResponseDirectionConfig: &compressorv3.Compressor_ResponseDirectionConfig{},
	})
	for _, up := range []string{"HTTP/1.1", "h2c"} {
		for _, down := range []string{"HTTP/1.1", "HTTP/2"} {
			t.Run(up+" upstream, "+down+" client", func(t *testing.T) {
				st := stats.NewStore()
				srv := echoUpstream(t)
				if up == "h2c" {
					srv = h2cUpstream(t)
				}
				cl := newFakeCluster(st, "echo", up == "h2c", hostOf(srv))
				cfg := hcm(routeConfig(clusterRoute("/", "echo")), comp, decomp)
				p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"echo": cl}, Extensions: builtin.Registry()})
				c := client()
				if down == "HTTP/2" {
					c = h2cClient()
				}
				status, h, body := do(t, c, "POST", p.url("/up"), bytes.NewReader(zbody.Bytes()),
					map[string]string{"content-encoding": "gzip", "accept-encoding": "gzip", "content-type": "text/plain"})
				if status != 200 || h.Get("Content-Encoding") != "gzip" {
					t.Fatalf("status %d, content-encoding %q", status, h.Get("Content-Encoding"))
				}
				zr, err := gzip.NewReader(strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				echoed, err := io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
				head, got, _ := strings.Cut(string(echoed), "\n\n")
				if got != text {
					t.Errorf("the upstream got %d bytes, want the %d decoded", len(got), len(text))
				}
				if strings.Contains(head, "content-encoding") || strings.Contains(head, "content-length: ") {
					t.Errorf("the upstream saw the client's framing:\n%s", head)
				}
				if p.counter("http.test.decompressor.in.gzip.request.decompressed") != 1 ||
					p.counter("http.test.compressor.out.gzip.response.compressed") != 1 {
					t.Error("the filters did not count their work")
				}
			})
		}
	}
}

// TestTransformedBodySkipped checks that a local reply skips a buffered
// request body that a filter would have transformed, so the connection
// carries the next request.
func TestTransformedBodySkipped(t *testing.T) {
	var zbody bytes.Buffer
	zw := gzip.NewWriter(&zbody)
	_, _ = io.WriteString(zw, "a short body")
	_ = zw.Close()
	st := stats.NewStore()
	srv := echoUpstream(t)
	cl := newFakeCluster(st, "echo", false, hostOf(srv))
	decomp := filter("decomp", &decompressorv3.Decompressor{DecompressorLibrary: &corev3.TypedExtensionConfig{
		Name: "in", TypedConfig: typed(&gzipdv3.Gzip{})}})
	cfg := hcm(routeConfig(clusterRoute("/up", "echo")), decomp)
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"echo": cl}, Extensions: builtin.Registry()})
	c := client()
	hdr := map[string]string{"content-encoding": "gzip"}
	if status, _, _ := do(t, c, "POST", p.url("/nowhere"), bytes.NewReader(zbody.Bytes()), hdr); status != 404 {
		t.Fatalf("status %d, want 404", status)
	}
	status, _, body := do(t, c, "POST", p.url("/up"), bytes.NewReader(zbody.Bytes()), hdr)
	if status != 200 || !strings.HasSuffix(body, "\n\na short body") {
		t.Fatalf("status %d, body %q", status, body)
	}
	if n := p.counter("http.test.downstream_cx_total"); n != 1 {
		t.Errorf("%d connections, want the one kept alive", n)
	}
}
