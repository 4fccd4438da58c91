package zstd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	zcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	zdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/decompressor/v3"
	kzstd "github.com/klauspost/compress/zstd"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// testDictionary builds a zstd dictionary with id from JSON-like samples,
// as "zstd --train" would.
func testDictionary(t *testing.T, id uint32) []byte {
	t.Helper()
	var samples [][]byte
	for i := range 40 {
		samples = append(samples, fmt.Appendf(nil, `{"user": "user-%d", "status": "active", "roles": ["reader", "writer"], "region": "eu-west-%d"}`, i, i%3))
	}
	d, err := kzstd.BuildDict(kzstd.BuildDictOptions{ID: id, Contents: samples, History: bytes.Join(samples[:10], nil), Offsets: [3]int{1, 4, 8}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func inline(b []byte) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
}

func TestDictionaryRoundTrip(t *testing.T) {
	dict := testDictionary(t, 4242)
	other := testDictionary(t, 77)
	cc, err := Compressor{}.CompileCompressor(&zcv3.Zstd{Dictionary: inline(dict)})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"user": "user-12345", "status": "active", "roles": ["reader", "writer"], "region": "eu-west-1"}`)
	c := cc.NewCompressor()
	p, err := c.Compress(body)
	if err != nil {
		t.Fatal(err)
	}
	// The pieces view the compressor's buffer: copied out.
	z := append([]byte(nil), p...)
	tail, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	z = append(z, tail...)
	var h kzstd.Header
	if err := h.Decode(z); err != nil || h.DictionaryID != 4242 {
		t.Fatalf("frame header %+v (%v): want dictionary id 4242", h, err)
	}
	// A client with the same dictionary reads it; one without cannot.
	d, _ := kzstd.NewReader(nil, kzstd.WithDecoderDicts(dict))
	if got, err := d.DecodeAll(z, nil); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("decoded %q, %v", got, err)
	}
	plain, _ := kzstd.NewReader(nil)
	if _, err := plain.DecodeAll(z, nil); err == nil {
		t.Fatal("decoded without the dictionary")
	}

	// The decompressor picks the frame's dictionary among its own.
	st := stats.NewStore()
	dc, err := Decompressor{}.CompileDecompressor(&zdv3.Zstd{Dictionaries: []*corev3.DataSource{inline(other), inline(dict)}}, st, "p.")
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, cc, dc, body, 10); !bytes.Equal(got, body) {
		t.Fatalf("got %q back", got)
	}
	// A frame without a dictionary still decodes.
	ncc, _ := Compressor{}.CompileCompressor(&zcv3.Zstd{})
	if got := roundTrip(t, ncc, dc, body, 10); !bytes.Equal(got, body) {
		t.Fatalf("a frame without dictionary: got %q back", got)
	}
	// One whose dictionary it lacks fails, counted as Envoy counts it.
	only, err := Decompressor{}.CompileDecompressor(&zdv3.Zstd{Dictionaries: []*corev3.DataSource{inline(other)}}, st, "q.")
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, cc, only, body, 10); bytes.Equal(got, body) {
		t.Fatal("decoded with the wrong dictionary")
	}
	if v := st.Counter("q.zstd.decompressor_library.zstd_dictionary_error").Value(); v != 1 {
		t.Errorf("zstd_dictionary_error %d, want 1", v)
	}
}

func TestDictionaryRefusals(t *testing.T) {
	good := testDictionary(t, 5)
	// The id follows the 4-byte magic number.
	zeroID := append([]byte(nil), good...)
	copy(zeroID[4:8], []byte{0, 0, 0, 0})
	for name, ds := range map[string]*corev3.DataSource{
		"not a zstd dictionary": inline([]byte("raw content is not a dictionary in zstd's format")),
		"cannot have ID 0":      inline(zeroID),
		"is empty":              inline(nil),
		"no such file":          {Specifier: &corev3.DataSource_Filename{Filename: "/nonexistent/dict"}},
	} {
		_, err := Compressor{}.CompileCompressor(&zcv3.Zstd{Dictionary: ds})
		if err == nil || !strings.HasPrefix(err.Error(), "dictionary: ") || !strings.Contains(err.Error(), name) {
			t.Errorf("compressor, %s: %v", name, err)
		}
		_, err = Decompressor{}.CompileDecompressor(&zdv3.Zstd{Dictionaries: []*corev3.DataSource{inline(good), ds}}, nil, "")
		if err == nil || !strings.HasPrefix(err.Error(), "dictionaries[1]: ") || !strings.Contains(err.Error(), name) {
			t.Errorf("decompressor, %s: %v", name, err)
		}
	}
}
