// Package grpcjsontranscoder is the gRPC-JSON transcoder HTTP filter
// (envoy.filters.http.grpc_json_transcoder): a JSON/HTTP request whose
// method and path match a google.api.http rule of a configured service
// (descriptors from a FileDescriptorSet) becomes a gRPC call: a POST to
// "/<package.Service>/<Method>" with the message built from the path
// variables, the query parameters and the JSON body; the gRPC response
// comes back as JSON, its status mapped to an HTTP status, a server
// stream as a JSON array (or newline-delimited, or server-sent events).
// Requests that match no rule, and gRPC requests, pass untouched, as in
// Envoy. A route's GrpcJsonTranscoder (typed_per_filter_config) replaces
// the filter's.
package grpcjsontranscoder

import (
	"errors"
	"net/http"
	"strings"

	transcoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.grpc_json_transcoder"

// The %RESPONSE_CODE_DETAILS% prefixes of Envoy's refusals: before the
// body was read, and while reading it.
const (
	detailsEarly = "early_grpc_json_transcode_failure"
	detailsLate  = "grpc_json_transcode_failure"
)

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*transcoderv3.GrpcJsonTranscoder)
	if !ok {
		return nil, errors.New("not a GrpcJsonTranscoder configuration")
	}
	t, err := compile(c)
	if err != nil {
		return nil, err
	}
	fc := &filterConfig{name: ctx.Name, own: t}
	if ctx.Stats != nil {
		// Envoy keeps them right under the connection manager's
		// prefix, with no segment of the filter's.
		fc.reqBytes = ctx.Stats.Gauge(ctx.StatPrefix + "transcoder_request_buffer_bytes")
		fc.respBytes = ctx.Stats.Gauge(ctx.StatPrefix + "transcoder_response_buffer_bytes")
	}
	return fc, nil
}

// CompileRoute implements httpfilter.RouteFactory: a route's whole
// GrpcJsonTranscoder, which replaces the filter's (with no services it
// turns transcoding off on the route).
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*transcoderv3.GrpcJsonTranscoder)
	if !ok {
		return nil, errors.New("not a GrpcJsonTranscoder configuration")
	}
	return compile(c)
}

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the filter's configured name, the key of its per-route
	// configuration.
	name string
	own  *transcoder
	// reqBytes and respBytes are the bytes of bodies the filters hold
	// (http.<stat_prefix>.transcoder_request_buffer_bytes and
	// transcoder_response_buffer_bytes); nil without a stat store.
	reqBytes, respBytes *stats.Gauge
}

// addGauge adds d to g, when there is one.
func addGauge(g *stats.Gauge, d int64) {
	if g != nil && d != 0 {
		g.Add(d)
	}
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{cfg: c} }

// filter is one request's transcoder.
type filter struct {
	cfg *filterConfig
	// enc transcodes the response of a transcoded request; nil when the
	// request passed untouched.
	enc *responseEncoder
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// OnDestroy implements httpfilter.Destroyer: what the response encoder
// still held leaves the gauge.
func (f *filter) OnDestroy() {
	if f.enc != nil {
		f.enc.release()
	}
}

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	t := f.cfg.own
	if rc, ok := s.RouteConfig(f.cfg.name).(*transcoder); ok {
		t = rc
	}
	if t.disabled {
		return httpfilter.Continue
	}
	h := s.RequestHeaders()
	ct, _ := h.Get("content-type")
	if isGrpcContentType(ct) {
		return httpfilter.Continue
	}
	rr, ok := s.(httpfilter.RequestReplacer)
	if !ok {
		return httpfilter.Continue
	}
	req := s.Request()
	origMethod, origPath := req.Method, req.Path
	r, bs := t.match.lookup(origMethod, origPath)
	if r == nil {
		if !t.rejectUnknownMethod {
			return httpfilter.Continue
		}
		path := origPath
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		s.SendLocalReply(404, "Could not resolve "+path+" to a method.", 0, detailsEarly+"{NOT_FOUND}")
		return httpfilter.Stop
	}
	rbs, err := t.resolveBindings(r.method.desc.Input(), bs)
	if err != nil {
		if !t.rejectUnknownQueryParameters {
			return httpfilter.Continue
		}
		s.SendLocalReply(400, err.Error(), 0, detailsEarly+"{INVALID_ARGUMENT}")
		return httpfilter.Stop
	}
	var body []byte
	details := detailsEarly
	if _, has := s.RequestBody(); has {
		details = detailsLate
		var complete bool
		body, complete, ok = s.BufferRequestBody(t.maxRequest+1, true)
		if !ok {
			return httpfilter.Stop
		}
		// The gauge counts the body while it is held; the router
		// forwards the transcoded message instead.
		addGauge(f.cfg.reqBytes, int64(len(body)))
		defer addGauge(f.cfg.reqBytes, -int64(len(body)))
		if !complete || len(body) > t.maxRequest {
			s.SendLocalReply(413, msgRequestTooLarge, 0, detailsLate+"{request_buffer_size_limit_reached}")
			return httpfilter.Stop
		}
	}
	grpcBody, rerr := t.buildRequest(r, rbs, body, ct)
	if rerr != nil {
		s.SendLocalReply(rerr.status, rerr.msg, 0, details+"{"+rerr.code+"}")
		return httpfilter.Stop
	}
	h.Set("content-type", "application/grpc")
	h.Set("x-envoy-original-path", origPath)
	h.Add("x-envoy-original-method", origMethod)
	h.Set("te", "trailers")
	s.SetPath(r.method.grpcPath)
	rr.SetMethod("POST")
	rr.ReplaceRequestBody(grpcBody)
	if !t.matchIncomingRoute {
		s.ClearRouteCache()
	}
	f.enc = &responseEncoder{t: t, r: r, s: s, streaming: r.method.desc.IsStreamingServer(), gauge: f.cfg.respBytes}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder. A response that is not
// gRPC (the proxy's own error, an upstream that is not a gRPC server)
// passes untouched.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	e := f.enc
	if e == nil {
		return httpfilter.Continue
	}
	e.s = s
	h := s.ResponseHeaders()
	gs, hasGs := h.Get("grpc-status")
	ct, _ := h.Get("content-type")
	_, hasBody := s.ResponseBody()
	if !isGrpcResponse(s.ResponseStatus(), ct, hasGs, hasBody) {
		f.enc = nil
		return httpfilter.Continue
	}
	if !hasBody {
		e.trailersOnly(gs, hasGs)
		return httpfilter.Continue
	}
	h.Set("content-type", e.contentType())
	s.TransformResponseBody(e)
	return httpfilter.Continue
}

// contentType is the transcoded response's content type until a message
// says otherwise (HttpBody).
func (e *responseEncoder) contentType() string {
	if e.streaming && e.t.sse {
		return "text/event-stream"
	}
	return "application/json"
}

// trailersOnly transcodes a response that is only a head with the
// status (a gRPC "trailers-only" response): its HTTP status from
// grpc-status, and a body when there is one to give (the status as JSON
// with convert_grpc_status, an empty array for a stream).
func (e *responseEncoder) trailersOnly(gsRaw string, hasGs bool) {
	s := e.s
	h := s.ResponseHeaders()
	code, valid := parseGrpcStatus(gsRaw, hasGs)
	var body []byte
	replace := false
	if valid && code != 0 && e.t.convertGrpcStatus {
		msg, hasMsg := h.Get("grpc-message")
		details, hasDetails := h.Get("grpc-status-details-bin")
		if js, ok := e.t.statusJSON(code, msg, hasMsg, details, hasDetails); ok {
			body, replace = js, true
			h.Del("grpc-status")
			h.Del("grpc-message")
			h.Del("grpc-status-details-bin")
			h.Set("content-type", "application/json")
		}
	}
	if !replace && e.streaming {
		h.Set("content-type", e.contentType())
		if !e.t.sse && !e.t.newlineDelimited && !e.r.responseIsHTTPBody() {
			body, replace = []byte("[]"), true
		}
	}
	status := http.StatusServiceUnavailable
	if valid {
		status = grpcToHTTP(code)
	}
	h.Del("trailer")
	if !replace {
		e.setStatus(status)
		return
	}
	// ReplaceResponse starts a new head: the upstream's fields are
	// carried over.
	type field struct{ name, value string }
	var keep []field
	if rh, ok := h.(rangeHeaders); ok {
		rh.Range(func(name, value string) bool {
			keep = append(keep, field{name, value})
			return true
		})
	}
	s.ReplaceResponse(status, string(body))
	h = s.ResponseHeaders()
	h.Del("content-type")
	for _, kv := range keep {
		h.Add(kv.name, kv.value)
	}
}
