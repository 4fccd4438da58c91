package httpconn

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// traceReason is why a request is traced or not (Envoy's Tracing::Reason),
// as the x-request-id UUID records it.
type traceReason uint8

const (
	notTraceable traceReason = iota
	traceSampling
	traceServiceForced
	traceClientForced
)

// The UUID request id keeps the trace reason in the character of its
// version digit (Envoy's UUIDRequestIDExtension).
const (
	uuidLength        = 36
	uuidTraceByte     = 14
	uuidNoTrace       = '4'
	uuidTraceForced   = 'a'
	uuidTraceSampled  = 'b'
	uuidTraceClient   = 'c'
	headerDecoratorOp = "x-envoy-decorator-operation"
	headerTraceparent = "traceparent"
	headerTracestate  = "tracestate"
)

// The span names Envoy's tracer gives before a decorator renames them.
const (
	ingressOperation = "ingress"
	egressOperation  = "egress "
)

// uuidReason reads the trace reason of a request id.
func uuidReason(id string) traceReason {
	if len(id) != uuidLength {
		return notTraceable
	}
	switch id[uuidTraceByte] {
	case uuidTraceForced:
		return traceServiceForced
	case uuidTraceSampled:
		return traceSampling
	case uuidTraceClient:
		return traceClientForced
	}
	return notTraceable
}

// featureEnabled is Envoy's runtime featureEnabled for a fractional
// percent: the runtime key's value, a FractionalPercent or an integer
// percentage (above 100: always), replaces def.
func featureEnabled(rt RuntimeValues, key string, def fraction, random uint64) bool {
	return runtime.Fraction{Key: key, Numerator: def.Num, Denominator: def.Den}.Enabled(rt, random)
}

// sampleRequest is Envoy's mutateTracingRequestHeader: the trace reason of
// a request, decided from its x-request-id (a reason already recorded
// there is kept), x-client-trace-id with client_sampling,
// x-envoy-force-trace, and random_sampling, then overall_sampling; the
// decision is written back into the request id, so that the proxies
// further on keep it. hv holds the request's tracing headers, r is its
// route (nil for none).
func (s *stream) sampleRequest(t *tracingConfig, hv *spanHeaders, r *router.Route) traceReason {
	rid := &s.m.cfg.requestID
	if !rid.SampleByID {
		// use_request_id_for_trace_sampling: false leaves the decision to
		// the tracer (Envoy returns Sampling before reading the id).
		return traceSampling
	}
	client, random, overall := &t.client, &t.random, &t.overall
	if r != nil && r.Tracing != nil {
		client, random, overall = &r.Tracing.Client, &r.Tracing.Random, &r.Tracing.Overall
	}
	id, ok := hv.get(shRequestID)
	if !ok || len(id) < 8 {
		return notTraceable
	}
	n, ok := s.generatedIDNumber(id)
	if !ok {
		if n, ok = parseHex8(id); !ok {
			return notTraceable
		}
	}
	result := n % 10000
	var scratch samplingShares
	sh := t.shares(s.m.deps.Runtime, &scratch)
	reason := notTraceable
	if rid.PackTraceReason {
		reason = uuidReason(id)
	}
	if reason == notTraceable {
		switch {
		case hv.has(shClientTraceID) && sh.client.enabled(*client, rand.Uint64()):
			reason = traceClientForced
		case hv.has(shForceTrace):
			reason = traceServiceForced
		case sh.random.enabled(*random, result):
			reason = traceSampling
		}
		if reason != notTraceable {
			s.setRequestIDReason(id, reason)
		}
	}
	if reason != notTraceable && !sh.global.enabled(*overall, result) {
		reason = notTraceable
		s.setRequestIDReason(id, reason)
	}
	return reason
}

// generatedIDNumber returns parseHex8(id) without a parse when id is the
// request id this proxy generated for the request (genID); false when it
// is not.
func (s *stream) generatedIDNumber(id string) (uint64, bool) {
	// (An id of 36 bytes is never at address 0, which genID.at is when
	// no id was generated.)
	if uintptr(unsafe.Pointer(unsafe.StringData(id))) == s.genID.at && len(id) == uuidLength {
		return uint64(s.genID.hex8), true
	}
	return 0, false
}

// generatedID is a request id this proxy generated: at is the address of
// its first byte (in stream.idBuf; an address, compared and never
// followed, so that the store needs no write barrier), hex8 the number
// of its first 8 digits, as parseHex8 reads them.
type generatedID struct {
	at   uintptr
	hex8 uint32
}

// parseHex8 reads the first 8 characters of id as a hexadecimal number, as
// Envoy reads a request id for sampling; for every request, so the eight
// characters are checked and converted together in a word rather than
// one by one (id must have at least 8 bytes).
func parseHex8(id string) (uint64, bool) {
	_ = id[7]
	x := uint64(id[0])<<56 | uint64(id[1])<<48 | uint64(id[2])<<40 | uint64(id[3])<<32 |
		uint64(id[4])<<24 | uint64(id[5])<<16 | uint64(id[6])<<8 | uint64(id[7])
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	if x&high != 0 {
		return 0, false
	}
	// atLeast(v, c) has a byte's high bit set where v's byte is at least
	// c (bytes below 0x80, as here).
	atLeast := func(v uint64, c byte) uint64 { return (v + (0x80-uint64(c))*ones) & high }
	digit := atLeast(x, '0') &^ atLeast(x, '9'+1)
	// A letter's byte with 0x20 set is a to f only for A to F and a to f.
	folded := x | 0x20*ones
	letter := atLeast(folded, 'a') &^ atLeast(folded, 'f'+1)
	if digit|letter != high {
		return 0, false
	}
	// Each byte's value: its low nibble, plus 9 for a letter.
	v := x&(0x0f*ones) + (letter>>7)*9
	v = (v | v>>4) & 0x00ff00ff00ff00ff
	v = (v | v>>8) & 0x0000ffff0000ffff
	return (v | v>>16) & 0xffffffff, true
}

// setRequestIDReason records a trace reason in the request id, when it is
// a UUID.
func (s *stream) setRequestIDReason(id string, r traceReason) {
	if len(id) != uuidLength || !s.m.cfg.requestID.PackTraceReason {
		return
	}
	c := byte(uuidNoTrace)
	switch r {
	case traceSampling:
		c = uuidTraceSampled
	case traceServiceForced:
		c = uuidTraceForced
	case traceClientForced:
		c = uuidTraceClient
	}
	if id[uuidTraceByte] == c {
		return
	}
	if uintptr(unsafe.Pointer(unsafe.StringData(id))) == s.genID.at {
		// The id this proxy generated: its field and the start's pass
		// view idBuf, and see the byte changed in place; its first
		// digits stay.
		s.idBuf[uuidTraceByte] = c
		return
	}
	// id may view idBuf itself: the copy then writes each byte onto
	// itself. idBuf no longer holds (only) the generated id.
	s.genID = generatedID{}
	s.idBuf = append(s.idBuf[:0], id...)
	s.idBuf[uuidTraceByte] = c
	// The start's pass holds the new value, for the finished span.
	s.traceHeaders.setRequestID(&s.reqHeaders, id, view(s.idBuf))
}

// startTracing decides whether the request is traced, counts the
// decision, and starts its span: a child of the trace context the request
// carries, named by the route's decorator when it has one. Envoy's
// traceRequest.
func (s *stream) startTracing() {
	t := s.m.tracing
	// The tracing headers, found in one pass over the request's fields
	// rather than a search for each; the tracer reads traceparent and
	// tracestate from them.
	th := &s.traceHeaders
	s.findStartHeaders(t.startTable)
	th.reused = false
	// The route, matched once for the decision and the decorator.
	r := s.Route()
	reason := s.sampleRequest(t, &th.spanHeaders, r)
	s.traceReason = reason
	st := s.m.stats
	switch reason {
	case traceClientForced:
		st.tracingClientEnabled.Inc()
	case traceSampling:
		st.tracingRandomSampling.Inc()
	case traceServiceForced:
		st.tracingServiceForced.Inc()
	default:
		st.tracingNotTraceable.Inc()
	}
	if t.driver == nil {
		return
	}
	var span *tracing.Span
	if reason == notTraceable && t.ctxOnly != nil && t.ctxOnly.StartContext(th, false, &s.spanCtx) {
		// Not sampled, and nothing asks for child spans: the request
		// keeps only the context it propagates (injectTrace). A request
		// the decision traces (an incoming context may still say no)
		// goes straight to a span: the driver would decline most.
		if !s.spanCtx.Valid {
			return
		}
	} else {
		span = t.driver.StartSpan(th, s.spanOptions(reason != notTraceable))
		if span == nil {
			return
		}
		// Its names and tags view the request's buffers and tagBuf,
		// which outlive it (finishSpan).
		span.Borrow()
		s.span = span
		if span.Sampled {
			span.AddPreparedTags(t.consts.node)
		}
	}
	if r != nil && r.Decorator != nil {
		if span != nil {
			span.SetOperation(r.Decorator.Operation)
		}
		s.decorated, s.decoratedPropagate = r.Decorator.Operation, r.Decorator.Propagate
	}
	h := &s.reqHeaders
	if t.egress {
		// The next hop's server span takes the decorator's name.
		if s.decorated != "" && s.decoratedPropagate {
			h.Set(headerDecoratorOp, s.decorated)
		}
	} else if v, ok := th.get(shDecoratorOp); ok {
		// An ingress request may name its own span; the name is not
		// passed to the service, nor echoed in the response.
		if v != "" {
			if span != nil {
				span.SetOperation(v)
			}
			s.decorated = ""
		}
		h.Del(headerDecoratorOp)
	}
	if span != nil && span.Sampled {
		// The finished span's headers are those of this pass, unless
		// the fields are edited in between.
		th.keep()
	}
}

// findStartHeaders fills s.traceHeaders with the request's headers of
// table t, looking only at the fields that may hold them
// (copiedFields.start).
func (s *stream) findStartHeaders(t *spanHeaderTable) {
	th, h := &s.traceHeaders, &s.reqHeaders
	at, id := s.copied.start(h, t.names, s.genID.at)
	th.found = 0
	if id >= 0 {
		// Found before the fields the pass looks at, as a pass over
		// every field would: a later field of the name joins its value.
		th.values[shRequestID] = headerValue{h.fields[id].value, id}
		th.found = 1 << shRequestID
	}
	if at < len(h.fields) {
		th.scan(h, t, h.fields[at:], at)
	}
	th.h, th.t, th.adds = h, t, h.adds
}

// spanOptions are the options of the request's span: Envoy's span name,
// "ingress" or "egress <host>".
func (s *stream) spanOptions(traced bool) tracing.StartOptions {
	t := s.m.tracing
	op := ingressOperation
	if t.egress {
		op = egressOperation + s.authority
	}
	return tracing.StartOptions{
		Operation: op,
		Host:      s.authority,
		Egress:    t.egress,
		Spawn:     t.spawnUpstream,
		Start:     s.start,
		Traced:    traced,
		Local:     &s.localSpan,
	}
}

// requestSpan returns the request's span, made from its context when it
// was started as one (tracing.ContextDriver) and is needed after all (a
// mirrored request's child span); nil when the request has no span.
func (s *stream) requestSpan() *tracing.Span {
	if s.span == nil && s.spanCtx.Valid {
		s.spanCtx.Valid = false
		// Not sampled, it is never reported: its name does not matter.
		s.span = s.m.tracing.ctxDriver.ContextSpan(&s.spanCtx, s.spanOptions(false))
	}
	return s.span
}

// traceResponseHeaders applies the decorator to the response: an ingress
// span's decorated name goes back to the client (for its own span); an
// egress span takes the name the upstream sends, which goes no further.
func (s *stream) traceResponseHeaders() {
	t := s.m.tracing
	if t == nil {
		return
	}
	h := &s.respHeaders
	if !t.egress {
		if s.decorated != "" && s.decoratedPropagate {
			h.Set(headerDecoratorOp, s.decorated)
		}
		return
	}
	if v, ok := h.Get(headerDecoratorOp); ok {
		if v != "" && s.span != nil {
			s.span.SetOperation(v)
		}
		h.Del(headerDecoratorOp)
	}
}

// injectTrace writes the span's context into the upstream request: the
// request span's, or that of a child span of the upstream request when
// the router's start_child_span or spawn_upstream_span asks for one;
// nothing with tracing's no_context_propagation.
func (s *stream) injectTrace(cl UpstreamCluster) {
	if s.span == nil {
		t := s.m.tracing
		if !s.spanCtx.Valid || t.noPropagation {
			return
		}
		// Through the start's pass, which tells whether the request
		// has a traceparent or tracestate: without them, the field is
		// added here, with no call through the header interfaces.
		if d := t.ctxTraceparent; d != nil && s.traceHeaders.noW3C() {
			if v, ok := d.Traceparent(&s.spanCtx); ok {
				s.reqHeaders.Add(headerTraceparent, v)
				return
			}
		}
		t.ctxDriver.InjectContext(&s.spanCtx, &s.traceHeaders)
		return
	}
	// Through the start's pass too: the W3C propagation then searches
	// only the fields appended since for a traceparent or tracestate to
	// replace.
	if s.m.tracing.childSpans {
		s.child = s.span.Child("router "+cl.Name()+" egress", s.m.stamp(time.Now()))
		// Tagged and finished at once (finishChildSpan).
		s.child.Borrow()
		if !s.m.tracing.noPropagation {
			s.child.Inject(&s.traceHeaders)
		}
		return
	}
	if t := s.m.tracing; !t.noPropagation {
		// As Envoy's router with no_context_propagation: the span is
		// reported, the upstream learns nothing of it (a context the
		// client sent goes on as it came).
		if d := t.ctxTraceparent; d != nil && s.traceHeaders.noW3C() {
			// As for a bare context above.
			if v, ok := d.SpanTraceparent(s.span); ok {
				s.reqHeaders.Add(headerTraceparent, v)
				return
			}
		}
		s.span.Inject(&s.traceHeaders)
	}
}

// finishChildSpan ends the upstream request's span with Envoy's upstream
// tags.
func (s *stream) finishChildSpan(cl UpstreamCluster, proto string) {
	c := s.child
	if c == nil {
		return
	}
	s.child = nil
	now := s.m.stamp(time.Now())
	if c.Sampled {
		s.tagBuf = s.tagBuf[:0]
		c.SetTag(tracing.Key(tracing.KeyHTTPProtocol), proto)
		if s.host != nil {
			c.SetTag(tracing.Key(tracing.KeyUpstreamAddress), s.host.Address)
			c.SetTag(tracing.Key(tracing.KeyPeerAddress), s.host.Address)
		}
		s.commonTags(c, cl)
		t := s.m.tracing
		if t.verbose {
			s.logTimings(c, time.Time{})
		}
		if _, up := s.operationFormats(); up != nil && t.spawnUpstream {
			// upstream_operation names only spawn_upstream_span's spans.
			s.completeEntry(now)
			s.nameSpan(c, up)
		}
	}
	c.Finish(now)
}

// The events tracing.verbose logs (Envoy's span log names). Outrigger
// records two of Envoy's seven timings.
const (
	logFirstUpstreamRxByte  = "first_upstream_rx_byte_received"
	logLastDownstreamTxByte = "last_downstream_tx_byte_sent"
)

// logTimings logs the request's timing events to sp: the first upstream
// response byte, and the end of the response when end is known (the
// request's own span).
func (s *stream) logTimings(sp *tracing.Span, end time.Time) {
	if t := s.entry.FirstUpstreamByte; !t.IsZero() {
		sp.Log(t, logFirstUpstreamRxByte)
	}
	if !end.IsZero() {
		sp.Log(end, logLastDownstreamTxByte)
	}
}

// operationFormats are the span name formats of the request: the route's
// tracing operation and upstream_operation win over the connection
// manager's, each on its own.
func (s *stream) operationFormats() (op, upstream *accesslog.Formatter) {
	t := s.m.tracing
	op, upstream = t.operation, t.upstreamOperation
	r := s.route
	if r == nil {
		r = s.cached
	}
	if r != nil && r.Tracing != nil {
		if r.Tracing.Operation != nil {
			op = r.Tracing.Operation
		}
		if r.Tracing.UpstreamOperation != nil {
			upstream = r.Tracing.UpstreamOperation
		}
	}
	return op, upstream
}

// nameSpan renames sp with an operation format (tracing.operation or
// upstream_operation), which wins over decorators.
func (s *stream) nameSpan(sp *tracing.Span, f *accesslog.Formatter) {
	at := len(s.tagBuf)
	s.tagBuf = f.AppendValue(s.tagBuf, &s.entry)
	sp.SetOperation(s.tagSince(at))
}

// tagSince returns the bytes of tagBuf from at on, a tag's value. While a
// span is tagged, from its first tag to its Finish, tagBuf is only
// appended to: the span may borrow its values (tracing.Span.Borrow). A
// value's bytes stay where they are when tagBuf grows, in the array it
// leaves.
func (s *stream) tagSince(at int) string { return view(s.tagBuf[at:]) }

// finishSpan ends the request's span with Envoy's downstream tags
// (finalizeDownstreamSpan).
func (s *stream) finishSpan(now time.Time) {
	sp := s.span
	if sp == nil {
		return
	}
	s.span = nil
	if !sp.Sampled {
		sp.Finish(now)
		return
	}
	// The tags below are new to the span (it has node_id and zone), so
	// they are added without a search for an earlier value; only error
	// and custom tags may replace one.
	hv := s.traceHeaders.finish(&s.reqHeaders)
	if v, ok := hv.get(shRequestID); ok {
		sp.AddTag(tracing.Key(tracing.KeyRequestID), v)
	}
	s.tagBuf = s.appendTagURL(s.tagBuf[:0], hv)
	sp.AddTag(tracing.Key(tracing.KeyHTTPURL), s.tagSince(0))
	sp.AddTag(tracing.Key(tracing.KeyHTTPMethod), s.method)
	sp.AddTag(tracing.Key(tracing.KeyDownstreamCluster), hv.or(shDownstreamCluster, "-"))
	sp.AddTag(tracing.Key(tracing.KeyUserAgent), hv.or(shUserAgent, "-"))
	sp.AddConstTag(tracing.Key(tracing.KeyHTTPProtocol), s.proto)
	sp.AddConstTag(tracing.Key(tracing.KeyPeerAddress), s.remoteIP)
	if v, ok := hv.get(shClientTraceID); ok {
		sp.AddTag(tracing.Key(tracing.KeyClientTraceID), v)
	}
	if ct, ok := hv.get(shContentType); ok && strings.HasPrefix(ct, "application/grpc") {
		s.grpcTags(sp, ct)
	}
	at := len(s.tagBuf)
	s.tagBuf = tracing.AppendUint(s.tagBuf, s.bytesRecv)
	sp.AddTag(tracing.Key(tracing.KeyRequestSize), s.tagSince(at))
	at = len(s.tagBuf)
	s.tagBuf = tracing.AppendUint(s.tagBuf, s.bytesSent)
	sp.AddTag(tracing.Key(tracing.KeyResponseSize), s.tagSince(at))
	s.commonTags(sp, s.cluster)
	t := s.m.tracing
	if t.verbose {
		s.logTimings(sp, now)
	}
	if op, _ := s.operationFormats(); op != nil {
		s.nameSpan(sp, op)
	}
	sp.Finish(now)
}

// grpcTags are the tags of a gRPC request's span: its path, authority,
// content type and timeout, and the grpc-status and grpc-message of the
// answer (its trailers, or its headers for a trailers-only answer), with
// error set for the statuses that are the server's fault.
func (s *stream) grpcTags(sp *tracing.Span, contentType string) {
	sp.SetTag(tracing.Key(tracing.KeyGRPCPath), s.path)
	sp.SetTag(tracing.Key(tracing.KeyGRPCAuthority), s.authority)
	sp.SetTag(tracing.Key(tracing.KeyGRPCContentType), contentType)
	if v, ok := s.reqHeaders.Get("grpc-timeout"); ok {
		sp.SetTag(tracing.Key(tracing.KeyGRPCTimeout), v)
	}
	status, ok := s.respHeaders.Get("grpc-status")
	msg, hasMsg := s.respHeaders.Get("grpc-message")
	if !ok && s.respTrailers != nil {
		if vs := s.respTrailers.Values("grpc-status"); len(vs) > 0 {
			status, ok = vs[0], true
		}
		if vs := s.respTrailers.Values("grpc-message"); len(vs) > 0 {
			msg, hasMsg = vs[0], true
		}
	}
	if !ok {
		return
	}
	sp.SetTag(tracing.Key(tracing.KeyGRPCStatusCode), status)
	if hasMsg {
		sp.SetTag(tracing.Key(tracing.KeyGRPCMessage), msg)
	}
	switch status {
	case "2", "4", "12", "8", "13", "14", "15": // Unknown, DeadlineExceeded, Unimplemented, ResourceExhausted, Internal, Unavailable, DataLoss
		sp.SetTag(tracing.Key(tracing.KeyError), "true")
	}
}

// commonTags are the tags of every span (Envoy's setCommonTags). The
// span has none of their keys yet but error, which grpcTags may have set.
func (s *stream) commonTags(sp *tracing.Span, cl UpstreamCluster) {
	s.m.tracing.consts.addCommon(sp, cl)
	at := len(s.tagBuf)
	if s.status >= 0 {
		s.tagBuf = tracing.AppendUint(s.tagBuf, uint64(s.status))
	} else {
		s.tagBuf = strconv.AppendInt(s.tagBuf, int64(s.status), 10)
	}
	sp.AddTag(tracing.Key(tracing.KeyHTTPStatusCode), s.tagSince(at))
	at = len(s.tagBuf)
	s.tagBuf = s.flags.AppendShort(s.tagBuf)
	sp.AddTag(tracing.Key(tracing.KeyResponseFlags), s.tagSince(at))
	if s.status == 0 || s.status >= 500 {
		sp.SetTag(tracing.Key(tracing.KeyError), "true")
	}
	s.customTags(sp, s.m.tracing.tags)
	r := s.route
	if r == nil {
		// A request answered before the router ran: the route the
		// filters matched, if any.
		r = s.cached
	}
	if r != nil && r.Tracing != nil {
		s.customTags(sp, r.Tracing.Tags)
	}
}

// customTags sets custom tags; a request header tag takes its default
// when the header is absent, and a tag with no value is not set.
func (s *stream) customTags(sp *tracing.Span, tags []customTag) {
	for _, t := range tags {
		if t.Metadata != nil {
			var ok bool
			at := len(s.tagBuf)
			if s.tagBuf, ok = t.Metadata.AppendValue(s.tagBuf, &s.entry); ok {
				setCustomTag(sp, &t, s.tagSince(at))
			}
			continue
		}
		if t.Format != nil {
			at := len(s.tagBuf)
			s.tagBuf = t.Format.AppendValue(s.tagBuf, &s.entry)
			if v := s.tagSince(at); v != "" {
				setCustomTag(sp, &t, v)
			}
			continue
		}
		v := t.Value
		if t.Header != "" {
			if hv, ok := s.reqHeaders.Get(t.Header); ok {
				v = hv
			}
		}
		if v != "" {
			setCustomTag(sp, &t, v)
		}
	}
}

// setCustomTag sets a custom tag's value, with its value_type when it has
// one.
func setCustomTag(sp *tracing.Span, t *customTag, v string) {
	switch t.Type {
	case router.TagInt:
		sp.SetTypedTag(t.Tag, v, tracing.IntValue)
	case router.TagDouble:
		sp.SetTypedTag(t.Tag, v, tracing.DoubleValue)
	case router.TagBool:
		sp.SetTypedTag(t.Tag, v, tracing.BoolValue)
	default:
		if len(sp.Typed) > 0 {
			// A string tag replacing a typed one of the same key
			// (a route's over the connection manager's).
			sp.SetTypedTag(t.Tag, v, tracing.StringValue)
			return
		}
		sp.SetTag(t.Tag, v)
	}
}

// appendTagURL appends the http.url tag: the scheme
// (x-forwarded-proto), the host and the original path cut at
// max_path_tag_length.
func (s *stream) appendTagURL(b []byte, hv *spanHeaders) []byte {
	scheme := hv.or(shForwardedProto, s.scheme)
	host := s.authority
	if s.upAuthority != "" {
		host = s.upAuthority
	}
	path := s.path
	if n := s.m.tracing.maxPathTagLength; len(path) > n {
		path = path[:n]
	}
	b = append(b, scheme...)
	b = append(b, "://"...)
	b = append(b, host...)
	return append(b, path...)
}

// The request headers the tracing reads, by their index in spanHeaders:
// those a finished request's span is tagged with, and those the sampling
// decision and the span's start read.
const (
	shRequestID = iota
	shDownstreamCluster
	shUserAgent
	shClientTraceID
	shContentType
	shForwardedProto
	shForceTrace
	shTraceparent
	shTracestate
	shDecoratorOp
	shCount
)

// spanHeaderNames are the names of the spanHeaders, by index.
var spanHeaderNames = [shCount]string{
	shRequestID:         "x-request-id",
	shDownstreamCluster: "x-envoy-downstream-service-cluster",
	shUserAgent:         "user-agent",
	shClientTraceID:     "x-client-trace-id",
	shContentType:       "content-type",
	shForwardedProto:    "x-forwarded-proto",
	shForceTrace:        "x-envoy-force-trace",
	shTraceparent:       "traceparent",
	shTracestate:        "tracestate",
	shDecoratorOp:       headerDecoratorOp,
}

// spanHeaderTable lists spanHeaders by the length of their names: the
// one or two of each length (shCount past the last); names holds their
// buckets.
type spanHeaderTable struct {
	byLen [35][2]uint8
	names nameMask
}

// newSpanHeaderTable is the table of the spanHeaders of set (a mask of
// indices).
func newSpanHeaderTable(set uint16) *spanHeaderTable {
	var t spanHeaderTable
	for n := range t.byLen {
		t.byLen[n] = [2]uint8{shCount, shCount}
	}
	for k, name := range spanHeaderNames {
		if set&(1<<k) == 0 {
			continue
		}
		t.names |= nameBit(name)
		c := &t.byLen[len(name)]
		if c[0] == shCount {
			c[0] = uint8(k)
		} else {
			c[1] = uint8(k)
		}
	}
	return &t
}

// The tables of the spanHeaders that a finished span is tagged with, of
// those the sampling decision and the span's start read (startHeaders:
// no two of a length), and of both, which the start's pass looks for when
// most requests are sampled, so that their finish reuses it
// (tracingConfig.sampledPass): each name found costs an unsampled
// request more than its share of a finish pass.
var (
	finishHeaders      = uint16(1<<shRequestID | 1<<shDownstreamCluster | 1<<shUserAgent | 1<<shClientTraceID | 1<<shContentType | 1<<shForwardedProto)
	decisionHeaders    = uint16(1<<shRequestID | 1<<shClientTraceID | 1<<shForceTrace | 1<<shTraceparent | 1<<shTracestate | 1<<shDecoratorOp)
	finishHeaderTable  = newSpanHeaderTable(finishHeaders)
	startHeaderTable   = newSpanHeaderTable(decisionHeaders)
	sampledHeaderTable = newSpanHeaderTable(finishHeaders | decisionHeaders)
)

// spanHeaderWords are words of the spanHeaderNames, by index: their first
// eight bytes, their last eight, and the eight after the first (for
// names longer than 16 bytes). A name of at most 24 bytes equals one of
// these when those words do: two or three word compares, where a string
// compare of a name longer than 16 bytes was a call.
var spanHeaderWords = func() (w [shCount][3]uint64) {
	for k, name := range spanHeaderNames {
		w[k][0], w[k][1] = word8(name, 0), word8(name, len(name)-8)
		if len(name) > 16 {
			w[k][2] = word8(name, 8)
		}
	}
	return w
}()

// word8 is the eight bytes of s at i as a word (s has them).
func word8(s string, i int) uint64 {
	// An array pointer, not unsafe.Slice: the load is checked by the
	// caller's length tests, not again here.
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))[:])
}

// isLongSpanHeader reports whether name, longer than 16 bytes, of the
// length of spanHeaders k and with k's first and last words, is k's name.
func isLongSpanHeader(name string, k uint8) bool {
	if len(name) <= 24 {
		return word8(name, 8) == spanHeaderWords[k][2]
	}
	return name == spanHeaderNames[k]
}

// spanHeaders are the values of the request headers the tracing reads,
// found in one pass over the fields: a search of the whole list for each
// cost a request more than the rest of its tracing.
type spanHeaders struct {
	// values holds header k's value when found has bit k, with the index
	// of the field it is from (the first of a joined value); the others
	// are stale.
	values [shCount]headerValue
	found  uint16
}

// headerValue is a value of spanHeaders.
type headerValue struct {
	v  string
	at int
}

// find fills hv from h's fields, forgetting what it held: the headers
// of the table. A name given by several fields takes their joined value,
// as headerList.Get gives it.
func (hv *spanHeaders) find(h *headerList, t *spanHeaderTable) {
	hv.found = 0
	hv.scan(h, t, h.fields, 0)
}

// scan adds to hv the headers of the table among fields, h's fields from
// index from on; a name hv has already takes the joined value of all its
// fields.
func (hv *spanHeaders) scan(h *headerList, t *spanHeaderTable, fields []field, from int) {
	for i := range fields {
		name := fields[i].name
		// Each field costs a look-up by its name's length and, for the
		// few of a length looked for, words of its name compared: most
		// names are rejected without a byte compared.
		if len(name) >= len(t.byLen) {
			continue
		}
		c := &t.byLen[len(name)]
		k := c[0]
		if k == shCount {
			continue
		}
		first, last := word8(name, 0), word8(name, len(name)-8)
		if w := &spanHeaderWords[k]; first != w[0] || last != w[1] {
			if k = c[1]; k == shCount {
				continue
			}
			if w := &spanHeaderWords[k]; first != w[0] || last != w[1] {
				continue
			}
		}
		if len(name) > 16 && !isLongSpanHeader(name, k) {
			continue
		}
		if hv.found&(1<<k) != 0 {
			hv.values[k].v, _ = h.Get(name)
			continue
		}
		hv.values[k] = headerValue{fields[i].value, from + i}
		hv.found |= 1 << k
	}
}

// has reports whether header k was found.
func (hv *spanHeaders) has(k int) bool { return hv.found&(1<<k) != 0 }

// get returns header k's value.
func (hv *spanHeaders) get(k int) (string, bool) {
	if !hv.has(k) {
		return "", false
	}
	return hv.values[k].v, true
}

// or returns header k's value, def when absent.
func (hv *spanHeaders) or(k int, def string) string {
	if hv.has(k) {
		return hv.values[k].v
	}
	return def
}

// startHeaders are the request's headers as the tracer reads them when
// the span starts (tracing.Headers): the W3C context from the one pass,
// other names (Zipkin's B3 headers) by a search. They are also where an
// unsampled request's context is injected (tracing.HeaderSetDeleter),
// which the pass makes cheaper.
type startHeaders struct {
	spanHeaders
	h *headerList
	// adds is h.adds when the pass ran.
	adds uint32
	// t is the pass's table. reused: the pass is kept for the finished
	// span (keep), which was then edits and keptAdds of h.
	t               *spanHeaderTable
	reused          bool
	edits, keptAdds uint32
}

// keep marks a pass that found every header (sampledHeaderTable), as the start
// leaves the fields, for the finished span: its values stay right while
// h is only appended to.
func (th *startHeaders) keep() {
	th.reused, th.edits, th.keptAdds = th.t == sampledHeaderTable, th.h.edits, th.h.adds
}

// finish returns the headers of h a finished span is tagged with: the
// start's pass and the fields appended since, when the pass was over h
// and the fields were not edited in between (keep), or a new pass.
func (th *startHeaders) finish(h *headerList) *spanHeaders {
	hv := &th.spanHeaders
	if !th.reused || th.h != h || h.edits != th.edits {
		hv.find(h, finishHeaderTable)
		// The pass no longer knows of traceparent and tracestate
		// (SetDel).
		th.t = nil
		return hv
	}
	if n := int(h.adds - th.keptAdds); n > 0 {
		at := max(len(h.fields)-n, 0)
		hv.scan(h, finishHeaderTable, h.fields[at:], at)
	}
	return hv
}

// find fills th from h with the headers of t (startHeaderTable, or
// sampledHeaderTable) and keeps h for the other names.
func (th *startHeaders) find(h *headerList, t *spanHeaderTable) {
	th.found = 0
	th.scan(h, t, h.fields, 0)
	th.h, th.t, th.adds = h, t, h.adds
}

// setRequestID replaces the request id the pass found, id, by v in h's
// fields, as h.Set does, and the pass holds v too: in place, without a
// search, when id came from one field (not a joined value) that is still
// where the pass found it, and no field was appended since (none of the
// name to remove).
func (th *startHeaders) setRequestID(h *headerList, id, v string) {
	if i := th.values[shRequestID].at; th.h == h && h.adds == th.adds && i < len(h.fields) &&
		unsafe.StringData(h.fields[i].value) == unsafe.StringData(id) && len(h.fields[i].value) == len(id) &&
		h.fields[i].name == "x-request-id" {
		h.fields[i].value = v
		h.edits++
	} else {
		h.Set("x-request-id", v)
	}
	// One field of the name is left, with v.
	th.values[shRequestID].v = v
}

// Set implements tracing.HeaderSetter.
func (th *startHeaders) Set(name, value string) { th.h.Set(name, value) }

// Del implements tracing.HeaderSetter.
func (th *startHeaders) Del(name string) { th.h.Del(name) }

// SetDel implements tracing.HeaderSetDeleter. The W3C propagation of a
// request that came without traceparent and tracestate searches only the
// fields appended since the pass (the router's, such as
// x-envoy-expected-rq-timeout-ms): a name joins a list only by an
// append at its end, and deletions keep the order, so those are among
// the last h.adds-th.adds fields; the pass saw every other name. With no
// name of their lengths among them, the traceparent is appended: there is
// none to replace and no tracestate to remove. Sampled spans inject
// through it too; after the finished span's own pass (finish), which
// does not look for the W3C names, the fields are searched.
func (th *startHeaders) SetDel(set, value, del string) {
	h := th.h
	if set == headerTraceparent && del == headerTracestate && th.noW3C() {
		h.Add(set, value)
		return
	}
	h.SetDel(set, value, del)
}

// noW3C reports whether the request has neither traceparent nor
// tracestate, told by the start's pass and the fields appended since
// (see SetDel).
func (th *startHeaders) noW3C() bool {
	if th.found&(1<<shTraceparent|1<<shTracestate) != 0 || th.t == nil {
		return false
	}
	h := th.h
	fields := h.fields
	if n := int(h.adds - th.adds); n < len(fields) {
		fields = fields[len(fields)-n:]
	}
	return !hasNameOfLength(fields, len(headerTraceparent), len(headerTracestate))
}

// hasNameOfLength reports whether a field's name is a or b bytes long:
// the few fields appended since the start's pass are told apart from
// traceparent and tracestate by their lengths alone, without a call.
func hasNameOfLength(fields []field, a, b int) bool {
	for i := range fields {
		if n := len(fields[i].name); n == a || n == b {
			return true
		}
	}
	return false
}

// Get implements tracing.Headers.
func (th *startHeaders) Get(name string) (string, bool) {
	switch name {
	case "traceparent":
		return th.get(shTraceparent)
	case "tracestate":
		return th.get(shTracestate)
	}
	return th.h.Get(name)
}
