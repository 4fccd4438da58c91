package httpconn

import (
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// proxiesContinue reports whether the request's Expect: 100-continue goes
// to its HTTP/1 upstream (proxy_100_continue), whose 100 Continue the
// client then gets instead of the proxy's own. An upgrade keeps the
// proxy's: its upstream answer opens a tunnel.
func (s *stream) proxiesContinue() bool {
	return s.m.cfg.proxy100Continue && s.expect100 && s.body != nil && s.upg.typ == ""
}

// The ways the race between an upstream's first answer and the client's
// body ends (continueWait.state).
const (
	continuePending int32 = iota
	continueBodyFirst
	continueUpstreamFirst
)

// What awaitContinue leaves the exchange to do.
type continueOutcome int

const (
	// continueSendBody: the body goes upstream (the upstream's 100 was
	// relayed, or the client sent its body without waiting for one).
	continueSendBody continueOutcome = iota
	// continueAnswered: the upstream answered (or failed) before the
	// body: its answer is relayed and the body is not sent.
	continueAnswered
	// continueStop: the client went away while the 100 was relayed.
	continueStop
)

// continueWait is the upstream's first answer to a request head with
// Expect: 100-continue (a 100 Continue, a final head or an error), read by
// a goroutine of its own while the stream waits for the client's body, as
// Envoy forwards the body whenever the client sends it. The goroutine
// writes only the upstream scratch's head and response, which the stream
// reads once done is closed.
type continueWait struct {
	state atomic.Int32
	done  chan struct{}
	kind  http1.BodyKind
	err   error
	// collected: the stream has waited for done.
	collected bool
}

// startContinue starts reading the upstream's first answer on uc, after
// the request head went out. The proxy answers no 100 itself from here on.
func (s *stream) startContinue(uc *upstream.Conn) *continueWait {
	s.expect100 = false
	cw := &continueWait{done: make(chan struct{})}
	go func() {
		cw.kind, cw.err = s.readResponseHeadUntil(uc, true)
		if cw.state.CompareAndSwap(continuePending, continueUpstreamFirst) {
			// The stream may be waiting for the body: the answer
			// goes first.
			s.down.cancelAwait()
		}
		close(cw.done)
	}()
	return cw
}

// awaitContinue waits for the upstream's first answer or the client's
// body, whichever comes first, and relays an upstream 100 Continue.
func (s *stream) awaitContinue(cl UpstreamCluster, cw *continueWait) continueOutcome {
	// An error (the client gone, or a timeout) is found again by the
	// body's reader, which answers it.
	_ = s.down.awaitBody()
	if cw.state.CompareAndSwap(continuePending, continueBodyFirst) {
		return continueSendBody
	}
	cw.wait()
	s.down.endAwait()
	if cw.err != nil || s.up.resp.Status != 100 {
		return continueAnswered
	}
	if !s.relayContinue(cl) {
		return continueStop
	}
	return continueSendBody
}

// wait waits for the upstream's first answer.
func (cw *continueWait) wait() {
	if !cw.collected {
		<-cw.done
		cw.collected = true
	}
}

// stop ends the reading goroutine if the stream never took its answer (the
// exchange failed on the client's side), before uc is released.
func (cw *continueWait) stop(uc *upstream.Conn) {
	if cw == nil || cw.collected {
		return
	}
	_ = uc.SetDeadline(time.Unix(1, 0))
	cw.wait()
}

// relayContinue sends the upstream's 100 Continue to the client, counted as
// one of the upstream's responses as Envoy's router counts a 1xx.
func (s *stream) relayContinue(cl UpstreamCluster) bool {
	s.chargeCode(cl.Stats(), 100)
	if err := s.down.continue100(); err != nil {
		s.downstreamFailed()
		return false
	}
	return true
}

// finalResponseHead reads the response head after the request went out.
// With a continueWait, its answer comes first: a 100 Continue that came
// after the client started its body is relayed all the same (as Envoy
// relays it), then the final head is read. stop is set when the client
// went away meanwhile.
func (s *stream) finalResponseHead(cl UpstreamCluster, cw *continueWait, uc *upstream.Conn) (kind http1.BodyKind, err error, stop bool) {
	if cw == nil {
		kind, err = s.readResponseHead(uc)
		return kind, err, false
	}
	relayed := cw.collected
	cw.wait()
	if cw.err != nil || s.up.resp.Status != 100 {
		return cw.kind, cw.err, false
	}
	if !relayed && !s.relayContinue(cl) {
		return 0, nil, true
	}
	kind, err = s.readResponseHead(uc)
	return kind, err, false
}
