package extproc

import (
	"net/http"
	"strconv"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// filter is one request's ext_proc filter.
type filter struct {
	c    *config
	mode mode
	svc  *service
	// failureModeAllow, ns and initialMetadata are the filter's settings
	// with the route's overrides.
	failureModeAllow bool
	ns               metadataNamespaces
	initialMetadata  []*corev3.HeaderValue
	// mu serializes the exchanges: a streamed request body is read on
	// another goroutine while the response may have begun.
	mu sync.Mutex
	st *sideStream
	// obs is the stream in observability_mode.
	obs *observer
	// done: processing is over, nothing more goes to the processor.
	done bool
	// s is the stream, kept for the response body's phases.
	s httpfilter.Stream
	// replyHeaders edit the filter's own reply (immediate_response's
	// headers), in EncodeHeaders.
	replyHeaders *extprocsvc.HeaderMutation
	replied      bool
	// mdContext is the metadata sent with every message.
	mdContext *corev3.Metadata
	// routeConfigs is scratch space for the per-route configurations.
	routeConfigs []httpfilter.RouteConfig
	// reqAttrs and respAttrs are the request_attributes and
	// response_attributes not sent yet: they go with the first message
	// of their direction, whichever phase it is, as in Envoy.
	reqAttrs, respAttrs map[string]*structpb.Struct
	// respList are the response attributes to evaluate with the
	// response head (the filter's, or its modifier's).
	respList []attribute
	// saved is on_processing_response's filter state object.
	saved *savedResponse
	// early are the request body's pieces sent before the headers'
	// answer came, whose answers are still to read (see early.go).
	early []earlyPiece
	// protocolSent: the protocol_config went with a message.
	protocolSent bool
	// reqCL and respCL are the content-lengths the processor set, with
	// allow_content_length_header; origReqLen is the request body's
	// length as the client framed it (-1 unknown). See length.go.
	reqCL, respCL declaredCL
	origReqLen    int64
	// respReplaced: the response is a reply of the filter's own.
	respReplaced bool
	// duplexes are the FULL_DUPLEX_STREAMED bodies, stopped before the
	// filter is pooled again (see duplex.go).
	duplexes []*duplex
	// span is the request's span when it is traced and the processor is
	// a gRPC one, read where the request's goroutine may (streamSpan);
	// emitSpan is emit_client_span; propagate, without it, carries the
	// request span's context.
	span      *tracing.Span
	emitSpan  bool
	propagate *tracing.CallSpan
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: the request headers, then
// a buffered request body, go to the processor and come back mutated; a
// streamed body goes through as it flows.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.origReqLen, _ = s.RequestBody()
	st := f.decodeHeaders(s)
	if st == httpfilter.Continue {
		f.declareRequestLength(s)
	}
	return st
}

// decodeHeaders is DecodeHeaders but for the request's framing.
func (f *filter) decodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.s = s
	if f.c.info != nil {
		// Envoy sets its logging info for every request the filter
		// sees, under the filter's name.
		s.SetFilterState(f.c.name, f.c.info)
	}
	if f.c.saver != nil {
		f.saved = f.c.saver.start(s)
	}
	set, err := f.routeSettings(s)
	if err != nil {
		f.c.log.Error(err, "ext_proc per-route grpc_service")
		return f.sendReply(s, errorReply(f.c.statusOnError, detailsGrpcPrefix+"14"))
	}
	f.mode, f.svc, f.failureModeAllow = set.mode, set.svc, set.failureModeAllow
	f.ns, f.initialMetadata = set.ns, set.initialMetadata
	f.traceStream(s, set.emitClientSpan)
	f.mdContext = f.metadataContext(s)
	reqList, respList := set.attributeLists()
	f.respList = respList
	if len(reqList) > 0 {
		// Evaluated here, where the request head is the filter's: a
		// streamed body's first message leaves from another goroutine.
		f.reqAttrs = evaluateAttributes(reqList, s, false)
	}
	if f.mode.requestHeaders {
		if rs, ok := f.sendsBodyEarly(s); ok {
			return f.decodeHeadersEarly(s, rs)
		}
		_, hasBody := s.RequestBody()
		if ss, ok := s.(httpfilter.SourceStarter); ok && hasBody && !f.c.upstream && s.Request().Method != "CONNECT" && f.duplexHead(f.mode.requestBody, true) {
			return f.decodeHeadersDuplex(s, ss)
		}
		req := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestHeaders{
			RequestHeaders: &extprocsvc.HttpHeaders{Headers: f.requestHeaderMap(s), EndOfStream: !hasBody},
		}}
		f.mu.Lock()
		r, rep := f.call(req)
		f.mu.Unlock()
		if rep == nil {
			rep = f.requestHeadersAnswer(s, r)
		}
		if rep != nil {
			return f.sendReply(s, rep)
		}
	}
	return f.requestBody(s)
}

// requestHeadersAnswer applies the answer to the request headers.
func (f *filter) requestHeadersAnswer(s httpfilter.Stream, r *extprocsvc.ProcessingResponse) *reply {
	ok, rep := f.answer(r, phaseRequestHeaders)
	if !ok {
		return rep
	}
	f.receiveMetadata(s, r)
	cr := r.GetRequestHeaders().GetResponse()
	if hm := cr.GetHeaderMutation(); hm != nil {
		if err := applyHeaderMutation(hm, head{h: s.RequestHeaders(), s: s, cl: f.clFor(false)}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
			f.saveAnswer(r, err)
			return f.mutationFailed(err)
		}
	}
	f.saveAnswer(r, nil)
	f.clearRouteCache(s, cr)
	if cr.GetStatus() == extprocsvc.CommonResponse_CONTINUE_AND_REPLACE {
		// The answer is final for the request: its body, if the
		// answer has one, replaces the request's, and nothing more of
		// the request goes to the processor.
		if bm := cr.GetBodyMutation(); bm != nil {
			if body, changed := replaceBody(bm, nil); changed {
				s.TransformRequestBody(&replacer{body: body, n: -1})
			}
		}
		f.mode.requestBody = extprocv3.ProcessingMode_NONE
		f.mode.requestTrailers = false
	}
	return nil
}

// requestBody sends the request body as the body mode says.
func (f *filter) requestBody(s httpfilter.Stream) httpfilter.Status {
	if f.done {
		return httpfilter.Continue
	}
	if _, has := s.RequestBody(); !has || s.Request().Method == "CONNECT" {
		// A CONNECT's body is its tunnel.
		return httpfilter.Continue
	}
	switch f.mode.requestBody {
	case extprocv3.ProcessingMode_BUFFERED, extprocv3.ProcessingMode_BUFFERED_PARTIAL:
		partial := f.mode.requestBody == extprocv3.ProcessingMode_BUFFERED_PARTIAL
		body, complete, ok := s.BufferRequestBody(bodyLimit, partial)
		if !ok {
			return httpfilter.Stop
		}
		var trailers http.Header
		if src, ok := s.(httpfilter.RequestTrailerSource); ok && complete {
			trailers = src.BufferedRequestTrailers()
		}
		// As in Envoy, a body followed by trailers does not end the
		// stream: the trailers do.
		req := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_RequestBody{
			RequestBody: &extprocsvc.HttpBody{Body: body, EndOfStream: complete && len(trailers) == 0},
		}}
		f.mu.Lock()
		r, rep := f.call(req)
		f.mu.Unlock()
		if rep == nil {
			rep = f.requestBodyAnswer(s, r, len(body))
		}
		if rep != nil {
			return f.sendReply(s, rep)
		}
		if complete {
			return f.bufferedTrailers(s, trailers)
		}
	case extprocv3.ProcessingMode_STREAMED:
		s.TransformRequestBody(&streamDecoder{f: f})
		return httpfilter.Continue
	case extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		if f.c.upstream {
			// A route's mode asks for it where the filter's is refused.
			f.c.log.Error(nil, "ext_proc FULL_DUPLEX_STREAMED request body in an upstream filter chain is not supported")
			return f.sendReply(s, errorReply(f.c.statusOnError, detailsGrpcPrefix+"12"))
		}
		f.mu.Lock()
		d, rep := f.newDuplex(phaseRequestBody)
		f.mu.Unlock()
		if rep != nil {
			return f.sendReply(s, rep)
		}
		if d != nil {
			s.TransformRequestBody(&duplexDecoder{d: d})
		}
		return httpfilter.Continue
	}
	if n, _ := s.RequestBody(); f.mode.requestTrailers && n < 0 {
		// Only a body of unknown length (chunked, or HTTP/2 without
		// content-length) goes through a decoder for its trailers:
		// one would drop a known length.
		s.TransformRequestBody(&trailerDecoder{f: f})
	}
	return httpfilter.Continue
}

// bufferedTrailers sends the trailers of a request body buffered to its
// end, before the request goes on, as Envoy sends them once the buffered
// body's answer came; the trailers the answer leaves go upstream.
func (f *filter) bufferedTrailers(s httpfilter.Stream, trailers http.Header) httpfilter.Status {
	if !f.mode.requestTrailers || len(trailers) == 0 {
		return httpfilter.Continue
	}
	trailers = trailers.Clone()
	f.mu.Lock()
	rep := f.exchangeTrailers(trailers, phaseRequestTrailers)
	f.mu.Unlock()
	if rep != nil {
		return f.sendReply(s, rep)
	}
	s.TransformRequestBody(&trailerDecoder{fixed: trailers, fixedSet: true})
	return httpfilter.Continue
}

// requestBodyAnswer applies the answer to a buffered request body of n
// bytes.
func (f *filter) requestBodyAnswer(s httpfilter.Stream, r *extprocsvc.ProcessingResponse, n int) *reply {
	ok, rep := f.answer(r, phaseRequestBody)
	if !ok {
		return rep
	}
	f.receiveMetadata(s, r)
	cr := r.GetRequestBody().GetResponse()
	if hm := cr.GetHeaderMutation(); hm != nil {
		if err := applyHeaderMutation(hm, head{h: s.RequestHeaders(), s: s, cl: f.clFor(false)}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
			return f.mutationFailed(err)
		}
	}
	if body, changed := replaceBody(cr.GetBodyMutation(), nil); changed {
		s.TransformRequestBody(&replacer{body: body, n: n})
	}
	f.clearRouteCache(s, cr)
	return nil
}

// sendReply answers the request with rep, from a decoder step.
func (f *filter) sendReply(s httpfilter.Stream, rep *reply) httpfilter.Status {
	f.replyHeaders, f.replied = rep.headers, true
	if rep.grpcStatus >= 0 {
		s.SendGrpcLocalReply(rep.status, uint32(rep.grpcStatus), rep.body, 0, rep.details)
	} else {
		s.SendLocalReply(rep.status, rep.body, 0, rep.details)
	}
	return httpfilter.Stop
}

// clearRouteCache applies an answer's clear_route_cache as
// route_cache_action says; only an answer that mutates headers clears
// the route.
func (f *filter) clearRouteCache(s httpfilter.Stream, cr *extprocsvc.CommonResponse) {
	c := f.c
	if c.upstream {
		// An upstream filter's request was routed already: as Envoy's,
		// it clears nothing and counts the answers that asked.
		if cr.GetClearRouteCache() {
			c.stats.clearRouteCacheUpstreamIgnored.Inc()
		}
		return
	}
	if cr.GetHeaderMutation() == nil {
		if cr.GetClearRouteCache() {
			c.stats.clearRouteCacheIgnored.Inc()
		}
		return
	}
	switch c.routeCache {
	case extprocv3.ExternalProcessor_CLEAR:
		s.ClearRouteCache()
	case extprocv3.ExternalProcessor_RETAIN:
		if cr.GetClearRouteCache() {
			c.stats.clearRouteCacheDisabled.Inc()
		}
	default:
		if cr.GetClearRouteCache() {
			s.ClearRouteCache()
		}
	}
}

// requestHeaderMap is the request head as the processor sees it: the
// pseudo-headers, then the headers, those forward_rules let through.
func (f *filter) requestHeaderMap(s httpfilter.Stream) *corev3.HeaderMap {
	hm := &corev3.HeaderMap{}
	add := func(name, value string) bool {
		if f.c.forwards(name) {
			hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte(value)})
		}
		return true
	}
	rq := s.Request()
	add(":authority", rq.Host)
	add(":path", rq.Path)
	add(":method", rq.Method)
	add(":scheme", rq.Scheme)
	s.RangeRequestHeaders(add)
	if n := s.Info().ContentLength; n >= 0 {
		add("content-length", strconv.FormatInt(n, 10))
	}
	return hm
}

// rangeHeaders is the response headers' iteration, which the connection
// manager's header list has.
type rangeHeaders interface {
	Range(fn func(name, value string) bool)
}

// responseHeaderMap is the response head as the processor sees it.
func (f *filter) responseHeaderMap(s httpfilter.Stream) *corev3.HeaderMap {
	hm := &corev3.HeaderMap{}
	add := func(name, value string) bool {
		if f.c.forwards(name) {
			hm.Headers = append(hm.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte(value)})
		}
		return true
	}
	add(":status", strconv.Itoa(s.ResponseStatus()))
	if rh, ok := s.ResponseHeaders().(rangeHeaders); ok {
		rh.Range(add)
	}
	if n, has := s.ResponseBody(); has && n >= 0 {
		add("content-length", strconv.FormatInt(n, 10))
	}
	return hm
}

// metadataContext is the request's dynamic metadata of the
// metadata_options forwarding namespaces, and its cluster's metadata of
// the cluster_metadata_forwarding_namespaces, sent with every message;
// nil when there is none.
func (f *filter) metadataContext(s httpfilter.Stream) *corev3.Metadata {
	fw := f.ns.forward
	if len(fw.untyped) == 0 && len(fw.typed) == 0 {
		return f.c.addClusterMetadata(nil, s.ClusterName())
	}
	md := &corev3.Metadata{}
	dm := s.DynamicMetadata()
	for _, ns := range fw.untyped {
		if v, ok := dm.GetFilterMetadata()[ns]; ok {
			if md.FilterMetadata == nil {
				md.FilterMetadata = map[string]*structpb.Struct{}
			}
			md.FilterMetadata[ns] = v
		}
	}
	for _, ns := range fw.typed {
		if v, ok := dm.GetTypedFilterMetadata()[ns]; ok {
			if md.TypedFilterMetadata == nil {
				md.TypedFilterMetadata = map[string]*anypb.Any{}
			}
			md.TypedFilterMetadata[ns] = v
		}
	}
	return f.c.addClusterMetadata(md, s.ClusterName())
}

// receiveMetadata keeps an answer's dynamic_metadata of the
// metadata_options receiving namespaces in the request's dynamic
// metadata.
func (f *filter) receiveMetadata(s httpfilter.Stream, r *extprocsvc.ProcessingResponse) {
	dm := r.GetDynamicMetadata()
	if dm == nil {
		return
	}
	for _, ns := range f.ns.receive.untyped {
		if v, ok := dm.GetFields()[ns]; ok && v.GetStructValue() != nil {
			s.SetDynamicMetadata(ns, v.GetStructValue())
		}
	}
}

// OnDestroy implements httpfilter.Destroyer: the stream to the processor
// closes, and the filter goes back to its pool.
func (f *filter) OnDestroy() {
	c := f.c
	// Before f.mu: a duplex takes its lock, then the filter's.
	f.mu.Lock()
	duplexes := f.duplexes
	f.mu.Unlock()
	for _, d := range duplexes {
		d.close()
	}
	f.mu.Lock()
	if f.st != nil {
		f.finish(true)
	}
	if f.obs != nil {
		f.obs.finish(c.deferredClose)
	}
	f.mu.Unlock()
	*f = filter{routeConfigs: f.routeConfigs[:0]}
	c.pool.Put(f)
}
