package decompressor

import (
	"bytes"
	"strings"
	"testing"

	gzipdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/decompressor/v3"
	decompressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/decompressor/v3"
	kgzip "github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	gzlib "github.com/outrigger-dev/outrigger/pkg/proxy/compression/gzip"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

type noRuntime struct{}

func (noRuntime) Uint64(_ string, def uint64) uint64 { return def }

func compile(t *testing.T, st *stats.Store, y string) *filterConfig {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var p decompressorv3.Decompressor
	if err := protojson.Unmarshal(j, &p); err != nil {
		t.Fatal(err)
	}
	reg, err := extension.New(extension.Of(gzlib.DecompressorName, compression.DecompressorCategory, &gzipdv3.Gzip{}, gzlib.Decompressor{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Factory{}.Compile(&p, httpfilter.Context{Stats: st, StatPrefix: "http.in.", Extensions: reg, LookupByName: true, Runtime: noRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.(*filterConfig)
}

const gzipLib = `
decompressor_library:
  name: up
  typed_config: {"@type": type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip}
`

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := kgzip.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRequest(t *testing.T) {
	st := stats.NewStore()
	c := compile(t, st, gzipLib)
	body := strings.Repeat("request body ", 300)
	z := gz(t, body)
	s := httpfiltertest.NewStream("POST", "/", "content-encoding", "gzip", "accept-encoding", "br")
	s.ReqBodyLen, s.ReqHasBody = int64(len(z)), true
	f := c.NewFilter().(*filter)
	f.DecodeHeaders(s)
	defer f.OnDestroy()
	if _, ok := s.ReqHeaders.Get("content-encoding"); ok {
		t.Error("content-encoding stayed")
	}
	if ae, _ := s.ReqHeaders.Get("accept-encoding"); ae != "br,gzip" {
		t.Errorf("accept-encoding %q", ae)
	}
	out, err := s.DecodeBody(z[:10], z[10:])
	if err != nil || string(out) != body {
		t.Fatalf("decoded %d bytes, %v", len(out), err)
	}
	for name, want := range map[string]uint64{
		"http.in.decompressor.up.gzip.request.decompressed":             1,
		"http.in.decompressor.up.gzip.request.total_compressed_bytes":   uint64(len(z)),
		"http.in.decompressor.up.gzip.request.total_uncompressed_bytes": uint64(len(body)),
	} {
		if got := st.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestNotDecompressed(t *testing.T) {
	st := stats.NewStore()
	c := compile(t, st, gzipLib+`
request_direction_config: {advertise_accept_encoding: false}
`)
	for _, hs := range [][]string{
		{"content-encoding", "br"},
		{"content-encoding", "gzip", "cache-control", "no-transform"},
		{},
	} {
		s := httpfiltertest.NewStream("POST", "/", hs...)
		s.ReqBodyLen, s.ReqHasBody = 100, true
		f := c.NewFilter().(*filter)
		f.DecodeHeaders(s)
		if len(s.Decoders) != 0 {
			t.Errorf("%v: decoded", hs)
		}
		if _, ok := s.ReqHeaders.Get("accept-encoding"); ok {
			t.Errorf("%v: advertised", hs)
		}
		f.OnDestroy()
	}
	if got := st.Counter("http.in.decompressor.up.gzip.request.not_decompressed").Value(); got != 3 {
		t.Errorf("not_decompressed = %d", got)
	}
}
