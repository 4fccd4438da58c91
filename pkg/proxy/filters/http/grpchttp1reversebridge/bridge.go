// Package grpchttp1reversebridge is the gRPC HTTP/1.1 reverse bridge HTTP
// filter (envoy.filters.http.grpc_http1_reverse_bridge): a gRPC request
// goes upstream as a plain HTTP request of content_type (its gRPC frame
// header stripped with withhold_grpc_frames), and the upstream's answer
// comes back as a gRPC response: the client's content type, status 200,
// the body framed again (withhold_grpc_frames) and grpc-status in the
// trailers, derived from the upstream's HTTP status (200 is OK). An
// upstream answer of another content type becomes a gRPC error. A route's
// FilterConfigPerRoute may disable the filter.
package grpchttp1reversebridge

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	bridgev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_http1_reverse_bridge/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcstatus"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.grpc_http1_reverse_bridge"

// Envoy's response code details.
const (
	detailsTooSmall       = "grpc_bridge_data_too_small"
	detailsContentType    = "grpc_bridge_content_type_wrong"
	detailsMissingLength  = "grpc_bridge_content_length_missing"
	detailsWrongLength    = "grpc_bridge_content_length_wrong"
	grpcUnknown, grpcInt  = 2, 13
	frameHeader           = 5
	maxBody               = 1 << 20
	invalidRequestBodyMsg = "invalid request body"
)

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*bridgev3.FilterConfig)
	if !ok {
		return nil, errors.New("not a grpc_http1_reverse_bridge FilterConfig")
	}
	if c.GetContentType() == "" {
		return nil, errors.New("content_type: required")
	}
	return &filterConfig{
		name:        ctx.Name,
		contentType: c.GetContentType(),
		withhold:    c.GetWithholdGrpcFrames(),
		sizeHeader:  strings.ToLower(c.GetResponseSizeHeader()),
	}, nil
}

// routeConfig is a compiled FilterConfigPerRoute.
type routeConfig struct{ disabled bool }

// CompileRoute implements httpfilter.RouteFactory.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*bridgev3.FilterConfigPerRoute)
	if !ok {
		return nil, errors.New("not a grpc_http1_reverse_bridge FilterConfigPerRoute")
	}
	return &routeConfig{disabled: c.GetDisabled()}, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	name        string
	contentType string
	withhold    bool
	// sizeHeader is the lower-case response_size_header, "" for none.
	sizeHeader string
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{c: c} }

// filter is one request's filter.
type filter struct {
	c *filterConfig
	// enabled: the request was bridged; grpcCT is its content type.
	enabled bool
	grpcCT  string
	// req strips the request's frame header (withhold_grpc_frames).
	req *requestStripper
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// isGrpc reports a gRPC content type: application/grpc, alone or with a
// +subtype or parameters.
func isGrpc(ct string) bool {
	rest, ok := strings.CutPrefix(ct, "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders. A
// request without a body is not bridged.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if _, has := s.RequestBody(); !has {
		return httpfilter.Continue
	}
	if rc, ok := s.RouteConfig(f.c.name).(*routeConfig); ok && rc.disabled {
		return httpfilter.Continue
	}
	h := s.RequestHeaders()
	ct, _ := h.Get("content-type")
	if !isGrpc(ct) {
		return httpfilter.Continue
	}
	f.enabled, f.grpcCT = true, ct
	h.Set("content-type", f.c.contentType)
	h.Set("accept", f.c.contentType)
	if f.c.withhold {
		f.req = &requestStripper{}
		s.TransformRequestBody(f.req)
	}
	s.ClearRouteCache()
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: Envoy's encodeHeaders.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.enabled {
		return httpfilter.Continue
	}
	if f.req != nil && f.req.tooSmall.Load() {
		// The request's body was refused: its reply goes in gRPC form.
		grpcReply(s, f.grpcCT, grpcUnknown, invalidRequestBodyMsg, detailsTooSmall)
		return httpfilter.Continue
	}
	h := s.ResponseHeaders()
	ct, hasCT := h.Get("content-type")
	status := s.ResponseStatus()
	if ct != f.c.contentType {
		msg := "envoy reverse bridge: upstream responded with no content-type header, status code " + strconv.Itoa(status)
		if hasCT {
			msg = "envoy reverse bridge: upstream responded with unsupported content-type " + ct + ", status code " + strconv.Itoa(status)
		}
		grpcReply(s, f.grpcCT, grpcUnknown, msg, detailsContentType)
		return httpfilter.Continue
	}
	h.Set("content-type", f.grpcCT)
	code := 0
	if status != http.StatusOK {
		code = int(grpcstatus.FromHTTP(status))
	}
	e := &responseFramer{withhold: f.c.withhold, grpcStatus: strconv.Itoa(code), declared: -1}
	if f.c.withhold && f.c.sizeHeader != "" {
		v, _ := router.FirstField(h, f.c.sizeHeader)
		v, _, _ = strings.Cut(v, ",")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			grpcReply(s, f.grpcCT, grpcInt, "envoy reverse bridge: upstream did not set content length", detailsMissingLength)
			return httpfilter.Continue
		}
		e.declared = int64(n)
	}
	if ss, ok := s.(httpfilter.ResponseStatusSetter); ok {
		ss.SetResponseStatus(http.StatusOK)
	}
	if _, has := s.ResponseBody(); !has {
		// Envoy adds an empty frame and the grpc-status trailer to a
		// header-only answer when it withholds frames; here a response
		// without a body carries grpc-status in its head (a gRPC
		// trailers-only response), which clients read alike.
		if f.c.withhold {
			h.Set("grpc-status", e.grpcStatus)
		}
		return httpfilter.Continue
	}
	s.TransformResponseBody(e)
	return httpfilter.Continue
}

// grpcReply answers in place of the response with Envoy's gRPC local
// reply: status 200, the client's content type, grpc-status and
// grpc-message, and no body.
func grpcReply(s httpfilter.Stream, ct string, code int, msg, details string) {
	s.ReplaceResponse(http.StatusOK, "")
	h := s.ResponseHeaders()
	h.Set("content-type", ct)
	h.Set("grpc-status", strconv.Itoa(code))
	h.Set("grpc-message", msg)
	if ds, ok := s.(httpfilter.DetailsSetter); ok {
		ds.SetResponseCodeDetails(details)
	}
}
