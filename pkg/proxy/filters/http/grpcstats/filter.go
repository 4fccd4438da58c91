package grpcstats

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ctGrpc is gRPC's content type; "application/grpc+proto" and the like
// are gRPC too, "application/grpc-web" is not.
const ctGrpc = "application/grpc"

// filter is one request's grpc_stats filter. The request body's decoder
// may run on the upstream transport's goroutine while the response is
// encoded: the two sides keep apart fields, and the counters are atomic.
type filter struct {
	cfg *filterConfig
	// prefix is "cluster.<cluster>.grpc[.<service>.<method>].", empty
	// when the call is not tracked.
	prefix string
	// sent is when the request went upstream, zero when the response
	// did not come from there.
	sent time.Time
	req  requestCounter
	resp responseCounter
	// stream and state are, with emit_filter_state, the request's stream
	// and the filter state object left in it once a message passed
	// (setState: the two sides may count at once).
	stream   httpfilter.Stream
	state    *stateObject
	setState sync.Once
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: a gRPC request to a
// cluster is tracked, its request messages counted.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	r := s.Request()
	ct, _ := r.Headers.Get("content-type")
	if f.cfg.emitState {
		// Set before either side's body passes; a gRPC response to any
		// request counts too, as in Envoy.
		f.stream, f.state = s, &stateObject{}
	}
	if !isGrpc(ct) {
		return httpfilter.Continue
	}
	if cluster := s.ClusterName(); r.Path != "" && cluster != "" {
		if name, ok := f.cfg.statName(r.Path); ok {
			f.prefix = "cluster." + f.cfg.clusterStatName(cluster) + "." + name
		}
	}
	// The messages are counted for the stats, and for the filter state
	// of any gRPC request, as Envoy's filter does.
	if f.prefix == "" && !f.cfg.emitState {
		return httpfilter.Continue
	}
	if _, has := s.RequestBody(); has {
		f.req = requestCounter{f: f}
		s.TransformRequestBody(&f.req)
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: a grpc-status in the head
// (a trailers-only response) is counted now; a gRPC response's messages
// and its trailers' grpc-status as they pass.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.prefix == "" && !f.cfg.emitState {
		return httpfilter.Continue
	}
	f.sent = s.Info().UpstreamRequestSent
	h := s.ResponseHeaders()
	status, hasStatus := h.Get("grpc-status")
	if hasStatus {
		f.chargeStatus(status)
	}
	_, hasBody := s.ResponseBody()
	if !hasBody {
		f.chargeUpstreamTime()
		return httpfilter.Continue
	}
	ct, _ := h.Get("content-type")
	if f.prefix == "" && !isGrpc(ct) {
		return httpfilter.Continue // only the filter state counts: nothing to count
	}
	f.resp = responseCounter{f: f, grpc: s.ResponseStatus() == http.StatusOK && isGrpc(ct)}
	s.TransformResponseBody(&f.resp)
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer.
func (f *filter) OnDestroy() {
	*f = filter{cfg: f.cfg}
	f.cfg.pool.Put(f)
}

// isGrpc reports a gRPC content type, as Envoy's hasGrpcContentType.
func isGrpc(ct string) bool {
	rest, ok := strings.CutPrefix(ct, ctGrpc)
	return ok && (rest == "" || rest[0] == '+')
}

// counter is one of the call's counters.
func (f *filter) counter(name string) *stats.Counter { return f.cfg.stats.Counter(f.prefix + name) }

// recordState leaves a side's count so far (in count) in the filter
// state, with emit_filter_state: the object is put in the stream when the
// first message passes either way, as Envoy's maybeWriteFilterState.
func (f *filter) recordState(count *atomic.Uint64, total uint64) {
	if f.state == nil {
		return
	}
	count.Store(total)
	f.setState.Do(func() { f.stream.SetFilterState(StateKey, f.state) })
}

// chargeStatus counts a call's outcome from its grpc-status, as Envoy's
// gRPC context does: the status itself, success (status 0) or failure,
// and total.
func (f *filter) chargeStatus(status string) {
	if f.prefix == "" {
		return
	}
	f.counter(status).Inc()
	if status == "0" {
		f.counter("success").Inc()
	} else {
		f.counter("failure").Inc()
	}
	f.counter("total").Inc()
}

// chargeUpstreamTime records the upstream's time to the end of its
// response, with enable_upstream_stats, when the response came from
// upstream.
func (f *filter) chargeUpstreamTime() {
	if f.prefix == "" || !f.cfg.upstreamTime || f.sent.IsZero() {
		return
	}
	f.cfg.stats.HistogramWithUnit(f.prefix+"upstream_rq_time", stats.UnitMilliseconds).Record(uint64(time.Since(f.sent).Milliseconds()))
}

// requestCounter counts the request's messages as its body passes.
type requestCounter struct {
	f      *filter
	frames frameCounter
	// total is the messages counted so far.
	total uint64
}

// DecodeData implements httpfilter.DataDecoder.
func (c *requestCounter) DecodeData(p []byte) ([]byte, error) {
	if n := c.frames.inspect(p); n > 0 {
		c.total += n
		if c.f.prefix != "" {
			c.f.counter("request_message_count").Add(n)
		}
		if st := c.f.state; st != nil {
			c.f.recordState(&st.request, c.total)
		}
	}
	return p, nil
}

// DecodeEnd implements httpfilter.DataDecoder.
func (c *requestCounter) DecodeEnd() ([]byte, error) { return nil, nil }

// responseCounter counts a gRPC response's messages and its trailers'
// grpc-status.
type responseCounter struct {
	f      *filter
	grpc   bool
	frames frameCounter
	// total is the messages counted so far.
	total uint64
}

// EncodeData implements httpfilter.DataEncoder.
func (c *responseCounter) EncodeData(p []byte) ([]byte, error) {
	if !c.grpc {
		return p, nil
	}
	if n := c.frames.inspect(p); n > 0 {
		c.total += n
		if c.f.prefix != "" {
			c.f.counter("response_message_count").Add(n)
		}
		if st := c.f.state; st != nil {
			c.f.recordState(&st.response, c.total)
		}
	}
	return p, nil
}

// EncodeEnd implements httpfilter.DataEncoder: trailers end the call, as
// Envoy's encodeTrailers; a response without them is not counted.
func (c *responseCounter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if trailers == nil {
		return nil, nil, nil
	}
	if vs := trailers.Values("grpc-status"); len(vs) > 0 {
		c.f.chargeStatus(vs[0])
	}
	c.f.chargeUpstreamTime()
	return nil, trailers, nil
}
