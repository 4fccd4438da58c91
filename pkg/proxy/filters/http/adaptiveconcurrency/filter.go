package adaptiveconcurrency

import (
	"net/http"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Request states of the filter.
const (
	idle      = iota // not counted by the controller
	inFlight         // forwarded, not yet sampled
	completed        // sampled or cancelled
)

// filter is one request's adaptive_concurrency filter.
type filter struct {
	cfg   *filterConfig
	state int
	start time.Time
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: a request beyond the
// concurrency limit is refused.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.cfg
	if !c.enabled.Enabled(c.flags) {
		return httpfilter.Continue
	}
	if !c.ctrl.forward() {
		s.SendLocalReply(c.status, "reached concurrency limit", 0, "reached_concurrency_limit")
		return httpfilter.Stop
	}
	f.state, f.start = inFlight, time.Now()
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: the request's latency is
// sampled when its response is complete (Envoy's encodeComplete): now
// for a response without a body, else at the body's end.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.state != inFlight {
		return httpfilter.Continue
	}
	if _, hasBody := s.ResponseBody(); hasBody {
		s.TransformResponseBody(completion{f})
		return httpfilter.Continue
	}
	f.complete()
	return httpfilter.Continue
}

func (f *filter) complete() {
	if f.state == inFlight {
		f.state = completed
		f.cfg.ctrl.record(f.start)
	}
}

// OnDestroy implements httpfilter.Destroyer: a request that did not
// complete (reset, cut) is not sampled, only no longer counted.
func (f *filter) OnDestroy() {
	if f.state == inFlight {
		f.state = completed
		f.cfg.ctrl.cancel()
	}
}

// completion samples the request at the end of its response body.
type completion struct{ f *filter }

// EncodeData implements httpfilter.DataEncoder.
func (c completion) EncodeData(p []byte) ([]byte, error) { return p, nil }

// EncodeEnd implements httpfilter.DataEncoder.
func (c completion) EncodeEnd(t http.Header) ([]byte, http.Header, error) {
	c.f.complete()
	return nil, t, nil
}
