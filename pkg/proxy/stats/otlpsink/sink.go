package otlpsink

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// exportTimeout bounds an export whose service sets no timeout, so that a
// collector that never answers holds at most one flush's requests.
const exportTimeout = 30 * time.Second

// closeGrace is how long Close lets the last exports run before it
// cancels them.
const closeGrace = 2 * time.Second

// Sink exports each flush's stats. Flush converts the snapshot (which is
// only valid during the call) and queues the requests on a stats.Sender.
type Sink struct {
	conv   converter
	exp    exporter
	log    logr.Logger
	sender *stats.Sender[*colmetricspb.ExportMetricsServiceRequest]

	// last is the previous flush's time: where the next points start.
	last time.Time
}

func newSink(opts options, exp exporter, log logr.Logger) *Sink {
	s := &Sink{conv: converter{opts: opts}, exp: exp, log: log, last: time.Now()}
	s.sender = stats.NewSender(s.export)
	return s
}

// Flush implements stats.Sink.
func (s *Sink) Flush(sn *stats.Snapshot) error {
	now := sn.Time()
	reqs := s.conv.requests(s.conv.convert(sn, s.last, now))
	s.last = now
	if s.sender.Queue(reqs) {
		s.log.V(1).Info("dropped a stats export: the previous one was still being sent", "collector", s.exp.target())
	}
	return nil
}

// export sends one flush's requests, on the sender's goroutine.
func (s *Sink) export(ctx context.Context, reqs []*colmetricspb.ExportMetricsServiceRequest) {
	for _, r := range reqs {
		ctx, cancel := context.WithTimeout(ctx, exportTimeout)
		rejected, err := s.exp.export(ctx, r)
		cancel()
		switch {
		case err != nil:
			s.log.V(1).Info("stats export failed", "collector", s.exp.target(), "error", err.Error())
		case rejected > 0:
			s.log.V(1).Info("stats export partly rejected", "collector", s.exp.target(), "rejected_data_points", rejected)
		}
	}
}

// Close sends what the last flush left (the server's final flush), then
// closes the connection; a collector that does not answer holds it for at
// most closeGrace.
func (s *Sink) Close() error {
	s.sender.Close(closeGrace)
	return s.exp.close()
}
