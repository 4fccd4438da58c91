// Package grpchttp1bridge is the gRPC HTTP/1.1 bridge filter
// (envoy.filters.http.grpc_http1_bridge): it lets an HTTP/1.1 client that
// cannot read response trailers call a gRPC server. For a gRPC request
// over HTTP/1.x it holds the response until it ends, moves grpc-status and
// grpc-message from the trailers into the head, and answers 503 when the
// status is not 0, with the body's length announced; with
// upgrade_protobuf_to_grpc an application/x-protobuf request is framed as
// a gRPC message on the way up and the response's frame header removed on
// the way down; with ignore_query_parameters the query string of a
// bridged request is dropped. It follows Envoy's current filter, which no
// longer counts gRPC stats (the grpc_stats filter does).
package grpchttp1bridge

import (
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	bridgev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_http1_bridge/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.grpc_http1_bridge"

const (
	ctGrpc     = "application/grpc"
	ctProtobuf = "application/x-protobuf"
	// frameHeader is a gRPC message's prefix: a compression flag and a
	// 4-byte length.
	frameHeader = 5
)

// maxBody bounds the bodies the filter holds (the response it buffers,
// the request it frames): Envoy's default per-connection buffer limit,
// past which its buffering filters fail the stream.
const maxBody = 1 << 20

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, _ httpfilter.Context) (httpfilter.Config, error) {
	p, ok := config.(*bridgev3.Config)
	if !ok {
		return nil, errors.New("not a grpc_http1_bridge Config")
	}
	c := &filterConfig{upgrade: p.GetUpgradeProtobufToGrpc(), ignoreQuery: p.GetIgnoreQueryParameters()}
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	upgrade, ignoreQuery bool
	pool                 sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c.pool.Get().(*filter) }

// filter is one request's bridge.
type filter struct {
	cfg *filterConfig
	s   httpfilter.Stream
	// bridging: a gRPC request over HTTP/1.x, whose response is held;
	// framing: it was an application/x-protobuf request framed here, so
	// the response's frame header goes; dropped counts the header bytes
	// removed so far.
	bridging, framing bool
	dropped           int
	held              []byte
}

var (
	_ httpfilter.Decoder    = (*filter)(nil)
	_ httpfilter.Encoder    = (*filter)(nil)
	_ httpfilter.HeadHolder = (*filter)(nil)
	_ httpfilter.Destroyer  = (*filter)(nil)
)

// isGrpc reports a gRPC content type: application/grpc, alone or with a
// +subtype or parameters.
func isGrpc(ct string) bool {
	rest, ok := strings.CutPrefix(ct, ctGrpc)
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.s = s
	h := s.RequestHeaders()
	ct, _ := h.Get("content-type")
	framing := false
	if f.cfg.upgrade && ct == ctProtobuf {
		framing = true
		h.Set("content-type", ctGrpc)
		ct = ctGrpc
		s.ClearRouteCache()
	}
	if !isGrpc(ct) || s.Request().Path == "" || s.Info().Protocol == "HTTP/2" {
		// Not bridged: as in Envoy, an upgraded request over HTTP/2
		// keeps its new content type, and its body is not framed.
		return httpfilter.Continue
	}
	f.bridging, f.framing = true, framing
	if f.cfg.ignoreQuery {
		if path, _, found := strings.Cut(s.Request().Path, "?"); found {
			s.SetPath(path)
		}
	}
	if framing {
		return f.frameRequest(s)
	}
	return httpfilter.Continue
}

// frameRequest puts the request body in one gRPC frame: the whole body is
// read first, as Envoy buffers it to prepend the header.
func (f *filter) frameRequest(s httpfilter.Stream) httpfilter.Status {
	rr, ok := s.(httpfilter.RequestReplacer)
	if !ok {
		return httpfilter.Continue
	}
	var body []byte
	if _, has := s.RequestBody(); has {
		var complete bool
		body, complete, ok = s.BufferRequestBody(maxBody, false)
		if !ok {
			return httpfilter.Stop
		}
		if !complete {
			s.SendLocalReply(http.StatusRequestEntityTooLarge, "Payload Too Large", 0, "request_payload_too_large")
			return httpfilter.Stop
		}
	}
	framed := make([]byte, frameHeader+len(body))
	binary.BigEndian.PutUint32(framed[1:frameHeader], uint32(len(body)))
	copy(framed[frameHeader:], body)
	rr.ReplaceRequestBody(framed)
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: a bridged response with a
// body is held until it ends. One without (trailers-only) goes as it is,
// as in Envoy.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.bridging {
		return httpfilter.Continue
	}
	if _, has := s.ResponseBody(); has {
		s.TransformResponseBody(f)
	}
	return httpfilter.Continue
}

// HoldsHead implements httpfilter.HeadHolder.
func (f *filter) HoldsHead() bool { return true }

// EncodeData implements httpfilter.DataEncoder: the body is held, less
// the frame header of an upgraded request's response.
func (f *filter) EncodeData(p []byte) ([]byte, error) {
	if f.framing && f.dropped < frameHeader {
		n := min(frameHeader-f.dropped, len(p))
		f.dropped += n
		p = p[n:]
	}
	if len(f.held)+len(p) > maxBody {
		return nil, errors.New("grpc_http1_bridge: the response is over the " + strconv.Itoa(maxBody) + "-byte buffer limit")
	}
	f.held = append(f.held, p...)
	return nil, nil
}

// EncodeEnd implements httpfilter.DataEncoder: grpc-status and
// grpc-message move from the trailers into the head, a status other than
// 0 (or one that is not a number) makes the response a 503, and the body
// goes whole; the trailers do not go (an HTTP/1.1 client could not read
// them).
func (f *filter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	h := f.s.ResponseHeaders()
	if vs := trailers.Values("grpc-status"); len(vs) > 0 {
		if code, err := strconv.ParseUint(vs[0], 10, 64); err != nil || code != 0 {
			if ss, ok := f.s.(httpfilter.ResponseStatusSetter); ok {
				ss.SetResponseStatus(http.StatusServiceUnavailable)
			}
		}
		h.Set("grpc-status", vs[0])
	}
	if vs := trailers.Values("grpc-message"); len(vs) > 0 {
		h.Set("grpc-message", vs[0])
	}
	return f.held, nil, nil
}

// OnDestroy implements httpfilter.Destroyer: the filter goes back to its
// pool.
func (f *filter) OnDestroy() {
	held := f.held[:0]
	if cap(held) > 64<<10 {
		held = nil
	}
	*f = filter{cfg: f.cfg, held: held}
	f.cfg.pool.Put(f)
}
