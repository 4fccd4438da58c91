package otel

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// closeGrace bounds the last export when a sink is closed.
const closeGrace = time.Second

// defaultExportTimeout bounds an export when grpc_service sets no
// timeout, so that a collector that accepts calls and never answers does
// not stop logging for good (Envoy keeps any number of exports in flight
// instead; Outrigger keeps one). It is the OTLP exporters' default.
const defaultExportTimeout = 10 * time.Second

// minPendingBytes is the least the buffer holds before records are
// dropped: buffer_size_bytes only decides when to export (Envoy keeps any
// number of exports in flight and drops nothing), and Outrigger, with one
// export in flight, keeps what comes meanwhile up to this bound (the size
// of Envoy's default per-stream buffer limit, which its streaming access
// loggers drop above).
const minPendingBytes = 1 << 20

// sink is one OpenTelemetry access logger.
type sink struct {
	logName    string
	exp        exporter
	flushEvery time.Duration
	// maxBytes is the buffer size (the records' encoded sizes) that
	// starts an export; 0 exports every record at once. maxPending
	// bounds the buffer: records that come when it holds that much are
	// dropped.
	maxBytes, maxPending int
	statPrefix           string

	body        *template // nil: no body
	attributes  []keyTemplate
	filterState []string
	tags        []accesslog.CustomTag
	resource    []*commonpb.KeyValue

	written, dropped *stats.Counter
	log              logr.Logger

	mu      sync.Mutex
	records []*logspb.LogRecord
	size    int

	// sender exports the buffer; a full buffer wakes it.
	sender *accesslog.Sender

	loggedError bool // the sender's: a failure was logged
}

// start makes the sink's counters and starts its sender.
func (s *sink) start(ctx accesslog.SinkContext) *sink {
	st := ctx.Stats
	if st == nil {
		st = stats.NewStore()
	}
	s.maxPending = max(s.maxBytes, minPendingBytes)
	sc := st.Scope(s.statPrefix)
	s.written, s.dropped = sc.Counter("logs_written"), sc.Counter("logs_dropped")
	s.log = ctx.Log
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	s.sender = accesslog.StartSender(s.flushEvery, s.flush, s.flush)
	return s
}

// Log implements accesslog.Sink: it adds e's record to the buffer, or
// drops it when the buffer is full.
func (s *sink) Log(buf []byte, e *accesslog.Entry) ([]byte, error) {
	r, buf := s.record(buf, e)
	size := proto.Size(r)
	s.mu.Lock()
	if s.sender.Closed() || (len(s.records) > 0 && s.size >= s.maxPending) {
		s.mu.Unlock()
		s.dropped.Inc()
		s.sender.Wake()
		return buf, nil
	}
	s.records = append(s.records, r)
	s.size += size
	full := s.size >= s.maxBytes
	s.mu.Unlock()
	if full {
		s.sender.Wake()
	}
	return buf, nil
}

// record is e's LogRecord, as Envoy's emitLog makes it.
func (s *sink) record(buf []byte, e *accesslog.Entry) (*logspb.LogRecord, []byte) {
	r := &logspb.LogRecord{}
	if !e.StartTime.IsZero() {
		r.TimeUnixNano = uint64(e.StartTime.UnixNano())
	}
	if s.body != nil {
		r.Body, buf = s.body.render(buf, e)
	}
	r.Attributes, buf = renderList(s.attributes, buf, e)
	if e.TraceID != ([16]byte{}) {
		r.TraceId = append([]byte(nil), e.TraceID[:]...)
		r.SpanId = append([]byte(nil), e.SpanID[:]...)
	}
	for _, k := range s.filterState {
		var ok bool
		if buf, ok = e.AppendFilterStateJSON(buf[:0], k); ok {
			r.Attributes = append(r.Attributes, &commonpb.KeyValue{Key: k, Value: stringAny(string(buf))})
		}
	}
	for i := range s.tags {
		if v, ok := s.tags[i].Value(e); ok {
			r.Attributes = append(r.Attributes, &commonpb.KeyValue{Key: s.tags[i].Tag, Value: stringAny(strings.Clone(v))})
		}
	}
	return r, buf
}

// take empties the buffer.
func (s *sink) take() []*logspb.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records
	s.records, s.size = nil, 0
	return r
}

// flush exports the buffer in one request. The records of a failed
// export are lost and counted dropped, as in Envoy; the first failure in
// a row is logged.
func (s *sink) flush() {
	records := s.take()
	if len(records) == 0 {
		return
	}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: s.resource},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: records}},
	}}}
	ctx := s.sender.Context()
	if !s.exp.hasTimeout() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultExportTimeout)
		defer cancel()
	}
	rejected, err := s.exp.export(ctx, req)
	n := uint64(len(records))
	if err != nil {
		s.dropped.Add(n)
		if !s.loggedError {
			s.loggedError = true
			s.log.Info("cannot export access logs", "log_name", s.logName, "service", s.exp.target(), "error", err.Error())
		}
		return
	}
	s.loggedError = false
	// A partial success names how many records the collector rejected;
	// more than were sent counts them all.
	r := min(uint64(max(rejected, 0)), n)
	s.dropped.Add(r)
	s.written.Add(n - r)
}

// Close implements accesslog.Closer: later records are dropped, the
// buffer is exported within closeGrace, and the channel is closed.
func (s *sink) Close() error {
	if !s.sender.Close(closeGrace) {
		return nil
	}
	return s.exp.close()
}
