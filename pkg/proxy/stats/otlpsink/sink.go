package otlpsink

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// exportTimeout bounds an export whose service sets no timeout, so that a
// collector that never answers holds at most one flush's requests.
const exportTimeout = 30 * time.Second

// closeGrace is how long Close lets the last exports run before it
// cancels them: shutting down waits for a live collector, not a dead one.
const closeGrace = 2 * time.Second

// Sink exports each flush's stats. Flush converts the snapshot (which is
// only valid during the call) and hands the requests to a sender
// goroutine, so a slow collector never holds up the flush or the other
// sinks; a flush whose predecessor is still being sent replaces the
// waiting one rather than queueing behind it, keeping memory bounded.
type Sink struct {
	conv converter
	exp  exporter
	log  logr.Logger

	// last is the previous flush's time: where the next points start.
	last time.Time

	mu      sync.Mutex
	pending []*colmetricspb.ExportMetricsServiceRequest
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
}

func newSink(opts options, exp exporter, log logr.Logger) *Sink {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sink{
		conv: converter{opts: opts}, exp: exp, log: log, last: time.Now(),
		wake: make(chan struct{}, 1), done: make(chan struct{}), ctx: ctx, cancel: cancel,
	}
	go s.send()
	return s
}

// Flush implements stats.Sink.
func (s *Sink) Flush(sn *stats.Snapshot) error {
	now := sn.Time()
	reqs := s.conv.requests(s.conv.convert(sn, s.last, now))
	s.last = now
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	if s.pending != nil {
		s.log.V(1).Info("dropping a stats export: the previous one is still being sent", "collector", s.exp.target())
	}
	s.pending = reqs
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// send exports what Flush leaves, until Close.
func (s *Sink) send() {
	defer close(s.done)
	for {
		s.mu.Lock()
		reqs, closed := s.pending, s.closed
		s.pending = nil
		s.mu.Unlock()
		for _, r := range reqs {
			s.exportOne(r)
		}
		if closed {
			return
		}
		if reqs == nil {
			<-s.wake
		}
	}
}

func (s *Sink) exportOne(r *colmetricspb.ExportMetricsServiceRequest) {
	ctx, cancel := context.WithTimeout(s.ctx, exportTimeout)
	defer cancel()
	rejected, err := s.exp.export(ctx, r)
	switch {
	case err != nil:
		s.log.V(1).Info("stats export failed", "collector", s.exp.target(), "error", err.Error())
	case rejected > 0:
		s.log.V(1).Info("stats export partly rejected", "collector", s.exp.target(), "rejected_data_points", rejected)
	}
}

// Close sends what the last flush left (the server's final flush), then
// closes the connection. A collector that does not answer holds it for
// at most closeGrace.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.cancel()
		<-s.done
	}
	s.cancel()
	return s.exp.close()
}
