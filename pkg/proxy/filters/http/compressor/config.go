// Package compressor is the compressor HTTP filter
// (envoy.filters.http.compressor): it compresses response bodies (and,
// with request_direction_config, request bodies) with its compressor
// library (gzip, brotli, zstd), chooses among the compressor filters of
// the chain by the request's Accept-Encoding and its q-values as Envoy
// does, and counts http.<stat_prefix>.compressor.<library name>.<library>.*.
package compressor

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.compressor"

// defaultMinContentLength is Envoy's min_content_length default.
const defaultMinContentLength = 30

// defaultContentTypes are the types Envoy compresses when content_type is
// empty.
var defaultContentTypes = []string{
	"text/html", "text/plain", "text/css", "application/javascript", "application/x-javascript",
	"text/javascript", "text/x-javascript", "text/ecmascript", "text/js", "text/jscript", "text/x-js",
	"application/ecmascript", "application/x-json", "application/xml", "application/json",
	"image/svg+xml", "text/xml", "application/xhtml+xml", "application/grpc-web", "application/grpc-web+proto",
}

// Factory builds the filter and compiles its per-route configuration.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// direction is a compiled CommonDirectionConfig and its stats.
type direction struct {
	// flag is the direction's enabled flag, read through rt.
	flag         runtime.FeatureFlag
	rt           runtime.BoolReader
	minLength    int64
	contentTypes map[string]bool
	// typeMatchers are content_type_matcher, compiled: set, they decide
	// instead of contentTypes.
	typeMatchers []router.StringMatch
	compressed, notCompressed, uncompressedBytes, compressedBytes,
	tooSmall *stats.Counter
}

// enabled reads the direction's runtime flag.
func (d *direction) enabled() bool { return d.flag.Enabled(d.rt) }

// compileTypeMatchers compiles a direction's content_type_matcher; path
// is the direction's common_config.
func compileTypeMatchers(d *direction, cc *compressorv3.Compressor_CommonDirectionConfig, path string) error {
	for i, m := range cc.GetContentTypeMatcher() {
		sm, err := router.CompileStringMatch(m)
		if err != nil {
			return fmt.Errorf("%s.content_type_matcher[%d].%w", path, i, err)
		}
		d.typeMatchers = append(d.typeMatchers, sm)
	}
	return nil
}

// compileDirection compiles one direction; stats go under prefix.
func compileDirection(enabled *corev3.RuntimeFeatureFlag, minLength uint32, types []string, ctx httpfilter.Context, prefix string) direction {
	d := direction{flag: runtime.FeatureFlagOf(enabled), minLength: defaultMinContentLength}
	d.rt, _ = ctx.Runtime.(runtime.BoolReader)
	if minLength > 0 {
		d.minLength = int64(minLength)
	}
	if len(types) == 0 {
		types = defaultContentTypes
	}
	d.contentTypes = make(map[string]bool, len(types))
	for _, t := range types {
		d.contentTypes[strings.ToLower(strings.TrimSpace(t))] = true
	}
	sc := ctx.Stats.Scope(prefix)
	d.compressed = sc.Counter("compressed")
	d.notCompressed = sc.Counter("not_compressed")
	d.uncompressedBytes = sc.Counter("total_uncompressed_bytes")
	d.compressedBytes = sc.Counter("total_compressed_bytes")
	d.tooSmall = sc.Counter("content_length_too_small")
	return d
}

// minimumLength reports whether a body of length n (-1: unknown, which
// passes) is long enough, counting content_length_too_small when not.
func (d *direction) minimumLength(n int64) bool {
	if n < 0 || n >= d.minLength {
		return true
	}
	d.tooSmall.Inc()
	return false
}

// typeAllowed reports whether a content-type value is among the
// direction's types; no content-type passes, as in Envoy.
func (d *direction) typeAllowed(ct string, ok bool) bool {
	if !ok {
		return true
	}
	return d.allows(ct)
}

// allows reports whether the direction compresses a body of content-type
// ct: content_type_matcher, when set, sees the media type without its
// parameters, trimmed, in the case it came in (as Envoy's matchers, which
// have ignore_case for the rest); else the lower-cased media type must be
// among content_type or the default types.
func (d *direction) allows(ct string) bool {
	if len(d.typeMatchers) > 0 {
		if i := strings.IndexByte(ct, ';'); i >= 0 {
			ct = ct[:i]
		}
		ct = strings.TrimSpace(ct)
		for i := range d.typeMatchers {
			if d.typeMatchers[i].Matches(ct) {
				return true
			}
		}
		return false
	}
	return d.contentTypes[mediaType(ct)]
}

// mediaType is a content-type without its parameters, lower case.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.ToLower(strings.TrimSpace(ct))
}

// filterConfig is the compiled filter.
type filterConfig struct {
	name     string
	library  compression.CompressorConfig
	encoding string
	// request is set by request_direction_config.
	request    direction
	hasRequest bool
	response   direction
	// The response direction's options.
	disableOnEtag, weakenEtag, removeAcceptEncoding bool
	uncompressible                                  map[int]bool
	chooseFirst                                     bool
	// statusHeader is status_header_enabled: x-envoy-compression-status
	// says whether the response was compressed, and if not, why.
	statusHeader bool
	// The response's Accept-Encoding stats.
	noAcceptHeader, headerIdentity, headerUsed, headerOvershadowed,
	headerWildcard, headerNotValid, notCompressedEtag *stats.Counter

	pool sync.Pool
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := config.(*compressorv3.Compressor)
	if !ok {
		return nil, errors.New("not a Compressor configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	lib, err := compileLibrary(p.GetCompressorLibrary(), ctx)
	if err != nil {
		return nil, err
	}
	c := &filterConfig{name: ctx.Name, library: lib, encoding: lib.ContentEncoding(), chooseFirst: p.GetChooseFirst()}
	prefix := ctx.StatPrefix + "compressor." + p.GetCompressorLibrary().GetName() + "." + lib.StatsPrefix()
	if rdc := p.GetResponseDirectionConfig(); rdc != nil {
		cc := rdc.GetCommonConfig()
		//lint:ignore SA1019 content_type is deprecated but Envoy still reads it; Outrigger accepts it too.
		types := cc.GetContentType()
		c.response = compileDirection(cc.GetEnabled(), cc.GetMinContentLength().GetValue(), types, ctx, prefix+"response.")
		if err := compileTypeMatchers(&c.response, cc, "response_direction_config.common_config"); err != nil {
			return nil, err
		}
		c.disableOnEtag = rdc.GetDisableOnEtagHeader()
		c.weakenEtag = rdc.GetWeakenEtagOnCompress()
		c.removeAcceptEncoding = rdc.GetRemoveAcceptEncodingHeader()
		if codes := rdc.GetUncompressibleResponseCodes(); len(codes) > 0 {
			c.uncompressible = make(map[int]bool, len(codes))
			for i, code := range codes {
				if code < 100 || code > 599 {
					return nil, fmt.Errorf("response_direction_config.uncompressible_response_codes[%d]: %d is not an HTTP status", i, code)
				}
				c.uncompressible[int(code)] = true
			}
		}
		c.statusHeader = rdc.GetStatusHeaderEnabled()
	} else {
		// The deprecated top-level fields, read when
		// response_direction_config is not set, as Envoy does.
		//lint:ignore SA1019 Envoy still reads the deprecated fields without response_direction_config.
		c.response = compileDirection(p.GetRuntimeEnabled(), p.GetContentLength().GetValue(), p.GetContentType(), ctx, prefix)
		//lint:ignore SA1019 as above.
		c.disableOnEtag = p.GetDisableOnEtagHeader()
		//lint:ignore SA1019 as above.
		c.removeAcceptEncoding = p.GetRemoveAcceptEncodingHeader()
	}
	if rq := p.GetRequestDirectionConfig(); rq != nil {
		cc := rq.GetCommonConfig()
		c.hasRequest = true
		//lint:ignore SA1019 content_type is deprecated but Envoy still reads it.
		c.request = compileDirection(cc.GetEnabled(), cc.GetMinContentLength().GetValue(), cc.GetContentType(), ctx, prefix+"request.")
		if err := compileTypeMatchers(&c.request, cc, "request_direction_config.common_config"); err != nil {
			return nil, err
		}
	} else {
		// Envoy counts request.not_compressed even then.
		c.request = compileDirection(nil, 0, nil, ctx, prefix+"request.")
	}
	sc := ctx.Stats.Scope(prefix)
	c.noAcceptHeader = sc.Counter("no_accept_header")
	c.headerIdentity = sc.Counter("header_identity")
	c.headerUsed = sc.Counter("header_compressor_used")
	c.headerOvershadowed = sc.Counter("header_compressor_overshadowed")
	c.headerWildcard = sc.Counter("header_wildcard")
	c.headerNotValid = sc.Counter("header_not_valid")
	c.notCompressedEtag = sc.Counter("not_compressed_etag")
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// compileLibrary resolves and compiles compressor_library.
func compileLibrary(tec *corev3.TypedExtensionConfig, ctx httpfilter.Context) (compression.CompressorConfig, error) {
	if tec == nil {
		return nil, errors.New("compressor_library: must be set")
	}
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "compressor library", Category: compression.CompressorCategory, Name: tec.GetName(), Config: tec.GetTypedConfig(),
	}, ctx.LookupByName)
	if err != nil {
		return nil, fmt.Errorf("compressor_library.%w", err)
	}
	f, ok := ext.Factory.(compression.CompressorFactory)
	if !ok {
		return nil, fmt.Errorf("compressor_library.typed_config: extension %q is not a compressor library", ext.Name)
	}
	lib, err := f.CompileCompressor(msg)
	if err != nil {
		return nil, httpfilter.PrefixErrors("compressor_library.typed_config.", err)
	}
	return lib, nil
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	return c.pool.Get().(*filter)
}

// routeConfig is a compiled CompressorPerRoute.
type routeConfig struct {
	// enabled, when set, says whether responses are compressed.
	enabled, hasEnabled bool
	// removeAcceptEncoding, when set, overrides the filter's.
	removeAcceptEncoding, hasRemove bool
	// library, when set, is overrides.compressor_library: the route's
	// compressor replaces the filter's, with its content-encoding
	// (encoding), in both directions and in the choice among the
	// chain's compressors.
	library  compression.CompressorConfig
	encoding string
}

// CompileRoute implements httpfilter.RouteFactory.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := config.(*compressorv3.CompressorPerRoute)
	if !ok {
		return nil, errors.New("not a CompressorPerRoute configuration")
	}
	rc := &routeConfig{}
	switch o := p.GetOverride().(type) {
	case *compressorv3.CompressorPerRoute_Disabled:
		if !o.Disabled {
			return nil, errors.New("disabled: must be true")
		}
		rc.hasEnabled = true
	case *compressorv3.CompressorPerRoute_Overrides:
		if tec := o.Overrides.GetCompressorLibrary(); tec != nil {
			lib, err := compileLibrary(tec, ctx)
			if err != nil {
				return nil, fmt.Errorf("overrides.%w", err)
			}
			rc.library, rc.encoding = lib, lib.ContentEncoding()
		}
		if rdc := o.Overrides.GetResponseDirectionConfig(); rdc != nil {
			rc.enabled, rc.hasEnabled = true, true
			if r := rdc.GetRemoveAcceptEncodingHeader(); r != nil {
				rc.removeAcceptEncoding, rc.hasRemove = r.GetValue(), true
			}
		}
	default:
		return nil, errors.New("override: one of disabled or overrides must be set")
	}
	return rc, nil
}
