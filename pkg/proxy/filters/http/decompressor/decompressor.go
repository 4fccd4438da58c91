// Package decompressor is the decompressor HTTP filter
// (envoy.filters.http.decompressor): it decodes request and response
// bodies whose Content-Encoding is its library's (gzip, br, zstd),
// advertises the coding upstream in Accept-Encoding, and counts
// http.<stat_prefix>.decompressor.<library name>.<library>.*. Decoding is
// bounded: a piece inflates to at most max_inflate_ratio times its size
// (gzip; 100 for brotli and zstd), past which the body is cut and the
// library's error counted, as Envoy's compression bomb protection does.
package decompressor

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	decompressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/decompressor/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.decompressor"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// direction is one direction's compiled CommonDirectionConfig and stats.
type direction struct {
	flag                                                              runtime.FeatureFlag
	rt                                                                runtime.BoolReader
	ignoreNoTransform                                                 bool
	decompressed, notDecompressed, compressedBytes, uncompressedBytes *stats.Counter
}

// compileDirection compiles one direction; stats go under prefix.
func compileDirection(cc *decompressorv3.Decompressor_CommonDirectionConfig, ctx httpfilter.Context, prefix string) direction {
	d := direction{flag: runtime.FeatureFlagOf(cc.GetEnabled()), ignoreNoTransform: cc.GetIgnoreNoTransformHeader()}
	d.rt, _ = ctx.Runtime.(runtime.BoolReader)
	sc := ctx.Stats.Scope(prefix)
	d.decompressed = sc.Counter("decompressed")
	d.notDecompressed = sc.Counter("not_decompressed")
	d.compressedBytes = sc.Counter("total_compressed_bytes")
	d.uncompressedBytes = sc.Counter("total_uncompressed_bytes")
	return d
}

// enabled reads the direction's runtime flag.
func (d *direction) enabled() bool { return d.flag.Enabled(d.rt) }

// filterConfig is the compiled filter.
type filterConfig struct {
	library           compression.DecompressorConfig
	encoding          string
	request, response direction
	advertise         bool
	// The response trailers Envoy adds with the byte counts.
	trailerCompressed, trailerUncompressed string
	pool                                   sync.Pool
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := config.(*decompressorv3.Decompressor)
	if !ok {
		return nil, errors.New("not a Decompressor configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	libName := p.GetDecompressorLibrary().GetName()
	prefix := ctx.StatPrefix + "decompressor." + libName + "."
	lib, err := compileLibrary(p.GetDecompressorLibrary(), ctx, prefix)
	if err != nil {
		return nil, err
	}
	prefix += lib.StatsPrefix()
	c := &filterConfig{
		library:             lib,
		encoding:            lib.ContentEncoding(),
		request:             compileDirection(p.GetRequestDirectionConfig().GetCommonConfig(), ctx, prefix+"request."),
		response:            compileDirection(p.GetResponseDirectionConfig().GetCommonConfig(), ctx, prefix+"response."),
		advertise:           true,
		trailerCompressed:   "x-envoy-decompressor-" + libName + "-compressed-bytes",
		trailerUncompressed: "x-envoy-decompressor-" + libName + "-uncompressed-bytes",
	}
	if a := p.GetRequestDirectionConfig().GetAdvertiseAcceptEncoding(); a != nil {
		c.advertise = a.GetValue()
	}
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// compileLibrary resolves and compiles decompressor_library.
func compileLibrary(tec *corev3.TypedExtensionConfig, ctx httpfilter.Context, prefix string) (compression.DecompressorConfig, error) {
	if tec == nil {
		return nil, errors.New("decompressor_library: must be set")
	}
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "decompressor library", Category: compression.DecompressorCategory, Name: tec.GetName(), Config: tec.GetTypedConfig(),
	}, ctx.LookupByName)
	if err != nil {
		return nil, fmt.Errorf("decompressor_library.%w", err)
	}
	f, ok := ext.Factory.(compression.DecompressorFactory)
	if !ok {
		return nil, fmt.Errorf("decompressor_library.typed_config: extension %q is not a decompressor library", ext.Name)
	}
	lib, err := f.CompileDecompressor(msg, ctx.Stats, prefix)
	if err != nil {
		return nil, httpfilter.PrefixErrors("decompressor_library.typed_config.", err)
	}
	return lib, nil
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c.pool.Get().(*filter) }

// filter is one request's decompressor filter.
type filter struct {
	cfg       *filterConfig
	req, resp compression.Decompressor
	reqData   requestData
	// The bodies' byte counts, for the trailers.
	reqIn, reqOut, respIn, respOut uint64
}

var (
	_ httpfilter.Decoder     = (*filter)(nil)
	_ httpfilter.Encoder     = (*filter)(nil)
	_ httpfilter.DataEncoder = (*filter)(nil)
	_ httpfilter.Destroyer   = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: the coding is advertised
// upstream when responses are decoded, and the request body is decoded
// when it is in the library's coding.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.cfg
	h := s.RequestHeaders()
	if c.response.enabled() && c.advertise {
		h.Set("accept-encoding", addEncoding(h, c.encoding))
	}
	if _, has := s.RequestBody(); !has {
		return httpfilter.Continue
	}
	if f.begin(&c.request, h) {
		f.req = c.library.NewDecompressor()
		f.reqData = requestData{f: f}
		s.TransformRequestBody(&f.reqData)
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if _, has := s.ResponseBody(); !has {
		return httpfilter.Continue
	}
	if f.begin(&f.cfg.response, s.ResponseHeaders()) {
		f.resp = f.cfg.library.NewDecompressor()
		s.TransformResponseBody(f)
	}
	return httpfilter.Continue
}

// begin decides whether a body is decoded, counting the decision, and
// takes the coding off Content-Encoding when it is.
func (f *filter) begin(d *direction, h router.HeaderEditor) bool {
	ce, ok := h.Get("content-encoding")
	first, rest, _ := strings.Cut(ce, ",")
	if !ok || !d.enabled() || (!d.ignoreNoTransform && noTransform(h)) ||
		!strings.EqualFold(strings.TrimSpace(first), f.cfg.encoding) {
		d.notDecompressed.Inc()
		return false
	}
	d.decompressed.Inc()
	if rest = strings.TrimSpace(rest); rest == "" {
		h.Del("content-encoding")
	} else {
		h.Set("content-encoding", rest)
	}
	return true
}

// addEncoding returns Accept-Encoding with enc added unless it is there,
// as Envoy's addEncodingToAcceptEncoding.
func addEncoding(h router.HeaderEditor, enc string) string {
	v, ok := h.Get("accept-encoding")
	if !ok || strings.TrimSpace(v) == "" {
		return enc
	}
	var kept []string
	for _, tok := range strings.Split(v, ",") {
		name, _, _ := strings.Cut(tok, ";")
		if strings.EqualFold(strings.TrimSpace(name), enc) {
			continue
		}
		if t := strings.TrimSpace(tok); t != "" {
			kept = append(kept, t)
		}
	}
	return strings.Join(append(kept, enc), ",")
}

// noTransform reports Cache-Control: no-transform.
func noTransform(h router.HeaderEditor) bool {
	v, ok := h.Get("cache-control")
	if !ok {
		return false
	}
	for _, tok := range strings.Split(v, ",") {
		if strings.EqualFold(strings.TrimSpace(tok), "no-transform") {
			return true
		}
	}
	return false
}

// EncodeData implements httpfilter.DataEncoder.
func (f *filter) EncodeData(p []byte) ([]byte, error) {
	out := f.resp.Decompress(p)
	f.count(&f.cfg.response, len(p), len(out))
	f.respIn += uint64(len(p))
	f.respOut += uint64(len(out))
	return out, nil
}

// EncodeEnd implements httpfilter.DataEncoder: the rest, and Envoy's
// byte-count trailers.
func (f *filter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	out := f.resp.Finish()
	f.count(&f.cfg.response, 0, len(out))
	f.respOut += uint64(len(out))
	if trailers == nil {
		trailers = http.Header{}
	}
	trailers[f.cfg.trailerCompressed] = []string{fmt.Sprint(f.respIn)}
	trailers[f.cfg.trailerUncompressed] = []string{fmt.Sprint(f.respOut)}
	return out, trailers, nil
}

// count adds to a direction's byte counters.
func (f *filter) count(d *direction, in, out int) {
	d.compressedBytes.Add(uint64(in))
	d.uncompressedBytes.Add(uint64(out))
}

// requestData decodes the request body.
type requestData struct{ f *filter }

// DecodeData implements httpfilter.DataDecoder.
func (r *requestData) DecodeData(p []byte) ([]byte, error) {
	out := r.f.req.Decompress(p)
	r.f.count(&r.f.cfg.request, len(p), len(out))
	r.f.reqIn += uint64(len(p))
	r.f.reqOut += uint64(len(out))
	return out, nil
}

// DecodeEnd implements httpfilter.DataDecoder.
func (r *requestData) DecodeEnd() ([]byte, error) {
	out := r.f.req.Finish()
	r.f.count(&r.f.cfg.request, 0, len(out))
	r.f.reqOut += uint64(len(out))
	return out, nil
}

// DecodeTrailers implements httpfilter.TrailerDecoder: Envoy's byte-count
// trailers, added to the request's.
func (r *requestData) DecodeTrailers(trailers http.Header) http.Header {
	if trailers == nil {
		trailers = http.Header{}
	}
	trailers[r.f.cfg.trailerCompressed] = []string{fmt.Sprint(r.f.reqIn)}
	trailers[r.f.cfg.trailerUncompressed] = []string{fmt.Sprint(r.f.reqOut)}
	return trailers
}

// OnDestroy implements httpfilter.Destroyer.
func (f *filter) OnDestroy() {
	if f.req != nil {
		f.req.Release()
	}
	if f.resp != nil {
		f.resp.Release()
	}
	c := f.cfg
	*f = filter{cfg: c}
	c.pool.Put(f)
}
