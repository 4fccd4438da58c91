package admissioncontrol

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// filter is one request's admission_control filter.
type filter struct {
	cfg *filterConfig
	// record: the request's outcome is to be counted (not a refused
	// one, nor one the filter was disabled for).
	record bool
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: a request is refused with
// a 503 at the probability the window's success rate gives.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.cfg
	if !c.enabled.Enabled(c.flags) {
		return httpfilter.Continue
	}
	f.record = true
	requests, successes, rps := c.history.counts(c.now())
	if rps < c.rps.value(c.ints) {
		return httpfilter.Continue
	}
	if c.reject(float64(requests), float64(successes), rand.Uint64()) {
		f.record = false
		c.rejected.Inc()
		s.SendLocalReply(http.StatusServiceUnavailable, "", 0, "denied_by_admission_control")
		return httpfilter.Stop
	}
	return httpfilter.Continue
}

// reject draws whether to refuse a request, as Envoy does: the
// probability is (requests - successes/threshold) / (requests + 1), raised
// to 1/aggression, capped at max_rejection_probability, with four
// significant figures.
func (c *filterConfig) reject(requests, successes float64, random uint64) bool {
	threshold := min(c.srThreshold.value(c.values), 100) / 100
	p := (requests - successes/threshold) / (requests + 1)
	if a := max(1.0, c.aggression.value(c.values)); a != 1.0 && p > 0 {
		p = math.Pow(p, 1/a)
	}
	p = min(p, c.maxReject.value(c.values)/100)
	const accuracy = 10000
	return accuracy*max(p, 0) > float64(random%accuracy)
}

// EncodeHeaders implements httpfilter.Encoder: the response's outcome
// counts, from its status, or a gRPC response's grpc-status (from the
// trailers when the head has none).
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.record {
		return httpfilter.Continue
	}
	h := s.ResponseHeaders()
	gs, hasStatus := h.Get("grpc-status")
	_, hasBody := s.ResponseBody()
	ct, _ := h.Get("content-type")
	// Envoy's isGrpcResponseHeaders: a trailers-only answer has its
	// grpc-status in the head; else a 200 of a gRPC content type.
	grpcResponse := hasStatus
	if hasBody {
		grpcResponse = s.ResponseStatus() == http.StatusOK && isGrpc(ct)
	}
	switch {
	case grpcResponse && hasStatus:
		f.cfg.history.record(f.cfg.now(), f.grpcSuccess(gs))
	case grpcResponse:
		s.TransformResponseBody(trailerStatus{f})
	default:
		f.cfg.history.record(f.cfg.now(), f.cfg.criteria.httpSuccess(s.ResponseStatus()))
	}
	return httpfilter.Continue
}

// grpcSuccess reports whether a grpc-status value is a success; one that
// is not a number is not.
func (f *filter) grpcSuccess(v string) bool {
	n, err := strconv.ParseUint(v, 10, 32)
	return err == nil && f.cfg.criteria.grpcCodes[uint32(n)]
}

// isGrpc reports a gRPC content type, as Envoy's hasGrpcContentType.
func isGrpc(ct string) bool {
	rest, ok := strings.CutPrefix(ct, "application/grpc")
	return ok && (rest == "" || rest[0] == '+')
}

// trailerStatus reads a gRPC response's status from its trailers.
type trailerStatus struct{ f *filter }

// EncodeData implements httpfilter.DataEncoder.
func (t trailerStatus) EncodeData(p []byte) ([]byte, error) { return p, nil }

// EncodeEnd implements httpfilter.DataEncoder: trailers without a
// grpc-status count as a failure; a response without trailers is not
// counted, as in Envoy.
func (t trailerStatus) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if trailers != nil {
		vs := trailers.Values("grpc-status")
		t.f.cfg.history.record(t.f.cfg.now(), len(vs) > 0 && t.f.grpcSuccess(vs[0]))
	}
	return nil, trailers, nil
}
