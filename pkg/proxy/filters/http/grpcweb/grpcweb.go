// Package grpcweb is the gRPC-Web HTTP filter (envoy.filters.http.grpc_web):
// it turns gRPC-Web requests (application/grpc-web, grpc-web+proto and
// their base64 -text forms) into gRPC requests for the upstream, and the
// gRPC responses back into gRPC-Web, the trailers moved into the body as
// its trailer frame, as Envoy's filter does. It counts
// cluster.<cluster>.grpc-web.<service>.<method>.{success,failure,total,<status>}.
package grpcweb

import (
	"encoding/base64"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.grpc_web"

// The content types of gRPC-Web.
const (
	ctGrpcWeb          = "application/grpc-web"
	ctGrpcWebProto     = "application/grpc-web+proto"
	ctGrpcWebText      = "application/grpc-web-text"
	ctGrpcWebTextProto = "application/grpc-web-text+proto"
	ctGrpc             = "application/grpc"
)

// trailerFlag marks a gRPC-Web trailer frame.
const trailerFlag = 0x80

// maxMessage bounds the body of a non-gRPC response kept for grpc-message,
// as Envoy's MAX_BUFFERED_PLAINTEXT_LENGTH.
const maxMessage = 16384

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory: GrpcWeb has no field.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	if _, ok := config.(*grpcwebv3.GrpcWeb); !ok {
		return nil, errors.New("not a GrpcWeb configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	c := &filterConfig{stats: ctx.Stats}
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	stats *stats.Store
	pool  sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c.pool.Get().(*filter) }

// filter is one request's gRPC-Web filter.
type filter struct {
	cfg *filterConfig
	// grpcWeb: the request is gRPC-Web; textReq and textResp: its body,
	// and the response it accepts, are base64.
	grpcWeb, textReq, textResp bool
	// statPrefix is "cluster.<cluster>.grpc-web.<service>.<method>.",
	// empty when the request has no cluster or no gRPC path.
	statPrefix string
	// notGrpc: the response is not gRPC; its body becomes grpc-message.
	notGrpc bool
	message []byte
	// The base64 coders' leftovers and outputs.
	pending []byte
	out     []byte
	req     requestText
}

var (
	_ httpfilter.Decoder     = (*filter)(nil)
	_ httpfilter.Encoder     = (*filter)(nil)
	_ httpfilter.DataEncoder = (*filter)(nil)
	_ httpfilter.Destroyer   = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.RequestHeaders()
	ct, _ := h.Get("content-type")
	switch ct {
	case ctGrpcWeb, ctGrpcWebProto:
	case ctGrpcWebText, ctGrpcWebTextProto:
		f.textReq = true
	default:
		return httpfilter.Continue
	}
	if s.Request().Path == "" {
		return httpfilter.Continue
	}
	f.grpcWeb = true
	f.statPrefix = statPrefix(s.ClusterName(), s.Request().Path)
	h.Set("content-type", ctGrpc)
	if accept, _ := h.Get("accept"); accept == ctGrpcWebText || accept == ctGrpcWebTextProto {
		f.textResp = true
	}
	// gRPC servers require te: trailers.
	h.Set("te", "trailers")
	if _, ok := h.Get("grpc-accept-encoding"); !ok {
		h.Set("grpc-accept-encoding", "identity,deflate,gzip")
	}
	if _, has := s.RequestBody(); has && f.textReq {
		f.req = requestText{f: f}
		s.TransformRequestBody(&f.req)
	}
	return httpfilter.Continue
}

// statPrefix is the stat prefix of a gRPC call to cluster on path
// "/<service>/<method>", "" when there is none.
func statPrefix(cluster, path string) string {
	if cluster == "" || !strings.HasPrefix(path, "/") {
		return ""
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	service, method, ok := strings.Cut(path[1:], "/")
	if !ok || service == "" || method == "" || strings.Contains(method, "/") {
		return ""
	}
	return "cluster." + cluster + ".grpc-web." + service + "." + method + "."
}

// chargeStat counts a call's outcome from its grpc-status, when it has
// one, as Envoy's gRPC context does.
func (f *filter) chargeStat(status string, ok bool) {
	if f.statPrefix == "" || !ok {
		return
	}
	st := f.cfg.stats
	st.Counter(f.statPrefix + status).Inc()
	if status == "0" {
		st.Counter(f.statPrefix + "success").Inc()
	} else {
		st.Counter(f.statPrefix + "failure").Inc()
	}
	st.Counter(f.statPrefix + "total").Inc()
}

// EncodeHeaders implements httpfilter.Encoder.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.grpcWeb {
		return httpfilter.Continue
	}
	h := s.ResponseHeaders()
	gs, hasStatus := h.Get("grpc-status")
	f.chargeStat(gs, hasStatus)
	_, hasBody := s.ResponseBody()
	ct, _ := h.Get("content-type")
	f.notGrpc = !isGrpcResponse(s.ResponseStatus(), ct, hasStatus, hasBody) && !isGrpcWebProto(s.ResponseStatus(), ct)
	if f.textResp {
		h.Set("content-type", ctGrpcWebTextProto)
	} else {
		h.Set("content-type", ctGrpcWebProto)
	}
	if !hasBody {
		return httpfilter.Continue
	}
	if f.notGrpc {
		// A response that is not gRPC (an upstream's error page) says
		// so in gRPC terms: a status derived from its HTTP status, its
		// body as the message of a trailer frame.
		if !hasStatus {
			h.Set("grpc-status", strconv.Itoa(httpToGrpcStatus(s.ResponseStatus())))
		}
	}
	s.TransformResponseBody(f)
	return httpfilter.Continue
}

// isGrpcResponse is Envoy's isGrpcResponseHeaders: a trailers-only
// response with grpc-status, or a 200 of a gRPC content type.
func isGrpcResponse(status int, ct string, hasStatus, hasBody bool) bool {
	if !hasBody {
		return hasStatus
	}
	if status != http.StatusOK || !strings.HasPrefix(ct, ctGrpc) {
		return false
	}
	rest := ct[len(ctGrpc):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

// isGrpcWebProto reports a 200 response that is already gRPC-Web.
func isGrpcWebProto(status int, ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	return status == http.StatusOK && (strings.EqualFold(ct, ctGrpcWebProto) || strings.EqualFold(ct, ctGrpcWeb))
}

// httpToGrpcStatus maps an HTTP status to a gRPC status as gRPC's
// specification (and Envoy) do.
func httpToGrpcStatus(status int) int {
	switch status {
	case 400:
		return 13 // Internal
	case 401:
		return 16 // Unauthenticated
	case 403:
		return 7 // PermissionDenied
	case 404:
		return 12 // Unimplemented
	case 429, 502, 503, 504:
		return 14 // Unavailable
	}
	return 2 // Unknown
}

// EncodeData implements httpfilter.DataEncoder.
func (f *filter) EncodeData(p []byte) ([]byte, error) {
	if f.notGrpc {
		if room := maxMessage - len(f.message); room > 0 {
			f.message = append(f.message, p[:min(room, len(p))]...)
		}
		return nil, nil
	}
	if !f.textResp {
		return p, nil
	}
	return f.encodeText(p, false), nil
}

// EncodeEnd implements httpfilter.DataEncoder: the trailers become the
// body's trailer frame, "name:value\r\n" each.
func (f *filter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	var frame []byte
	switch {
	case f.notGrpc:
		var b strings.Builder
		b.WriteString("grpc-message:")
		b.WriteString(percentEncode(f.message))
		b.WriteString("\r\n")
		frame = appendFrame(nil, b.String())
	case len(trailers) > 0:
		if vs := trailers.Values("grpc-status"); len(vs) > 0 {
			f.chargeStat(vs[0], true)
		}
		frame = appendFrame(nil, trailerBlock(trailers))
	}
	if !f.textResp {
		return frame, nil, nil
	}
	return f.encodeText(frame, true), nil, nil
}

// trailerBlock is the trailers as a gRPC-Web trailer frame's payload:
// lower-case names, sorted, one "name:value\r\n" per value.
func trailerBlock(t http.Header) string {
	names := make([]string, 0, len(t))
	for k := range t {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		for _, v := range t[k] {
			b.WriteString(strings.ToLower(k))
			b.WriteByte(':')
			b.WriteString(v)
			b.WriteString("\r\n")
		}
	}
	return b.String()
}

// appendFrame appends a trailer frame of payload to b.
func appendFrame(b []byte, payload string) []byte {
	n := len(payload)
	b = append(b, trailerFlag, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	return append(b, payload...)
}

// percentEncode is gRPC's percent-encoding of grpc-message.
func percentEncode(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c >= 0x20 && c <= 0x7e && c != '%' {
			sb.WriteByte(c)
			continue
		}
		sb.WriteString("%" + strings.ToUpper(strconv.FormatInt(int64(c)|0x100, 16)[1:]))
	}
	return sb.String()
}

// encodeText base64-encodes the response body as a stream: whole groups
// of three bytes now, the rest with the next piece or, padded, at the end.
func (f *filter) encodeText(p []byte, end bool) []byte {
	f.pending = append(f.pending, p...)
	n := len(f.pending) / 3 * 3
	if end {
		n = len(f.pending)
	}
	f.out = f.out[:0]
	if n == 0 {
		return nil
	}
	f.out = base64.StdEncoding.AppendEncode(f.out, f.pending[:n])
	f.pending = append(f.pending[:0], f.pending[n:]...)
	return f.out
}

// requestText decodes a -text request body from base64.
type requestText struct {
	f       *filter
	pending []byte
	out     []byte
}

// errBase64 and errBase64Size are Envoy's answers to bad -text bodies.
var (
	errBase64     = &httpfilter.BodyError{Status: 400, Body: "Bad gRPC-web request, invalid base64 data.", Details: "grpc_base_64_decode_failed"}
	errBase64Size = &httpfilter.BodyError{Status: 400, Body: "Bad gRPC-web request, invalid base64 data.", Details: "grpc_base_64_decode_failed_bad_size"}
)

// DecodeData implements httpfilter.DataDecoder: whole groups of four
// characters are decoded, each group on its own so that padded segments
// may follow each other.
func (r *requestText) DecodeData(p []byte) ([]byte, error) {
	r.pending = append(r.pending, p...)
	n := len(r.pending) / 4 * 4
	r.out = r.out[:0]
	for i := 0; i < n; i += 4 {
		var err error
		if r.out, err = base64.StdEncoding.AppendDecode(r.out, r.pending[i:i+4]); err != nil {
			return nil, errBase64
		}
	}
	r.pending = append(r.pending[:0], r.pending[n:]...)
	return r.out, nil
}

// DecodeEnd implements httpfilter.DataDecoder.
func (r *requestText) DecodeEnd() ([]byte, error) {
	if len(r.pending) != 0 {
		return nil, errBase64Size
	}
	return nil, nil
}

// OnDestroy implements httpfilter.Destroyer.
func (f *filter) OnDestroy() {
	c := f.cfg
	pending, out := f.pending[:0], f.out[:0]
	*f = filter{cfg: c, pending: pending, out: out}
	c.pool.Put(f)
}
