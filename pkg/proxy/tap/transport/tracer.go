package transport

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
)

// tracer records one tapped connection, as Envoy's per-socket tapper
// does. Buffered, the events gather in one socket_buffered_trace, each
// direction's data up to its max_buffered_*_bytes (then *_truncated is
// set and that direction records no more events); the trace goes to the
// sink when the connection closes. Streaming, a segment with the
// connection's addresses goes out at once, then one segment per read,
// write and the close, each read or write cut at its limit, numbered by
// seq_num (1, then advanced by each event's byte count, and by one more
// for the close). With output_config.min_streamed_sent_bytes, the
// streamed events gather, whole (not cut at max_buffered_*_bytes), in one
// segment's events until they hold that many bytes of data, or span
// batchAge, or the connection closes; then the segment goes out.
type tracer struct {
	s   *Socket
	cfg *tap.Config
	// id is the trace id, and names file_per_tap files: a random number
	// per connection (Envoy's is its connection id).
	id   uint64
	conn *datatapv3.Connection
	now  func() time.Time

	// mu orders the events: a connection is read and written from
	// different goroutines.
	mu       sync.Mutex
	closed   bool
	seq      uint64
	buffered *datatapv3.SocketBufferedTrace
	rx, tx   int
	// batch gathers streamed events under min_streamed_sent_bytes, and
	// batchBytes counts their data.
	batch      *datatapv3.SocketEvents
	batchBytes int
}

// batchAge is Envoy's DefaultBufferedAgedDuration, in seconds: a batch
// whose first and last events are this far apart goes out however small,
// so that a quiet connection's events are not held indefinitely.
const batchAge = 15

func newTracer(s *Socket, cfg *tap.Config, local, remote net.Addr) *tracer {
	t := &tracer{s: s, cfg: cfg, id: rand.Uint64(), conn: connection(local, remote), now: time.Now, seq: 1}
	if cfg.Streaming {
		// The first segment carries tap_enabled's rate, as the HTTP
		// tap's first segment does.
		t.submit(&datatapv3.TraceWrapper{ConfiguredSampleRate: cfg.SampleRate, Trace: &datatapv3.TraceWrapper_SocketStreamedTraceSegment{
			SocketStreamedTraceSegment: &datatapv3.SocketStreamedTraceSegment{TraceId: t.id,
				MessagePiece: &datatapv3.SocketStreamedTraceSegment_Connection{Connection: t.conn}}}})
	} else {
		t.buffered = &datatapv3.SocketBufferedTrace{TraceId: t.id}
	}
	return t
}

// connection is the trace's connection: its addresses, as Envoy's
// socket_address messages.
func connection(local, remote net.Addr) *datatapv3.Connection {
	c := &datatapv3.Connection{}
	if local != nil {
		c.LocalAddress = address(local)
	}
	if remote != nil {
		c.RemoteAddress = address(remote)
	}
	return c
}

// address is a in Envoy's form: a socket address, or a pipe's path.
func address(a net.Addr) *corev3.Address {
	if u, ok := a.(*net.UnixAddr); ok {
		return &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: u.Name}}}
	}
	return listener.ProtoAddress(a)
}

// read records p, just read from the connection.
func (t *tracer) read(p []byte) { t.record(p, true) }

// write records p, just written to the connection.
func (t *tracer) write(p []byte) { t.record(p, false) }

// record adds a read or a write event.
func (t *tracer) record(p []byte, isRead bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	limit := t.cfg.MaxTx
	if isRead {
		limit = t.cfg.MaxRx
	}
	ev := &datatapv3.SocketEvent{Timestamp: timestamppb.New(t.now())}
	switch {
	case t.cfg.Streaming && t.cfg.MinStreamedSent > 0:
		// Batched events carry all their data, as Envoy's do.
		setData(ev, t.body(p, len(p)), isRead)
		t.gather(ev, len(p))
		t.seq += uint64(len(p))
		return
	case t.cfg.Streaming:
		// Each streamed event is cut at the limit on its own.
		setData(ev, t.body(p, limit), isRead)
		t.stream(ev)
		t.seq += uint64(len(p))
		return
	}
	used, truncated := &t.tx, &t.buffered.WriteTruncated
	if isRead {
		used, truncated = &t.rx, &t.buffered.ReadTruncated
	}
	if *truncated {
		return
	}
	b := t.body(p, limit-*used)
	*used += min(len(p), limit-*used)
	*truncated = b.GetTruncated()
	setData(ev, b, isRead)
	t.buffered.Events = append(t.buffered.Events, ev)
}

// setData makes ev the read or the write of b.
func setData(ev *datatapv3.SocketEvent, b *datatapv3.Body, isRead bool) {
	if isRead {
		ev.EventSelector = &datatapv3.SocketEvent_Read_{Read: &datatapv3.SocketEvent_Read{Data: b}}
	} else {
		ev.EventSelector = &datatapv3.SocketEvent_Write_{Write: &datatapv3.SocketEvent_Write{Data: b}}
	}
}

// close records the end of the connection: the closed event streamed, or
// the buffered trace submitted.
func (t *tracer) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	if t.cfg.Streaming {
		t.seq++
		ev := &datatapv3.SocketEvent{
			Timestamp:     timestamppb.New(t.now()),
			EventSelector: &datatapv3.SocketEvent_Closed_{Closed: &datatapv3.SocketEvent_Closed{}},
		}
		if t.cfg.MinStreamedSent > 0 {
			// The close sends what is gathered, however little.
			t.stamp(ev)
			t.addToBatch(ev)
			t.flushBatch()
			return
		}
		t.stream(ev)
		return
	}
	t.buffered.Connection = t.conn
	t.cfg.Sink.Submit(&datatapv3.TraceWrapper{ConfiguredSampleRate: t.cfg.SampleRate,
		Trace: &datatapv3.TraceWrapper_SocketBufferedTrace{SocketBufferedTrace: t.buffered}}, t.id)
	t.s.buffered.Inc()
	t.buffered = nil
}

// stream submits ev as a segment of its own, with its sequence number
// and, with set_connection_per_event, the connection.
func (t *tracer) stream(ev *datatapv3.SocketEvent) {
	t.stamp(ev)
	t.submitSegment(&datatapv3.SocketStreamedTraceSegment{MessagePiece: &datatapv3.SocketStreamedTraceSegment_Event{Event: ev}})
}

// stamp gives a streamed event its sequence number and, with
// set_connection_per_event, the connection.
func (t *tracer) stamp(ev *datatapv3.SocketEvent) {
	ev.SeqNum = t.seq
	if t.s.perEvent {
		ev.Connection = t.conn
	}
}

// gather adds ev, with n bytes of data, to the batch, and sends the batch
// once it holds min_streamed_sent_bytes or spans batchAge.
func (t *tracer) gather(ev *datatapv3.SocketEvent, n int) {
	t.stamp(ev)
	t.addToBatch(ev)
	t.batchBytes += n
	evs := t.batch.GetEvents()
	if t.batchBytes >= t.cfg.MinStreamedSent || evs[len(evs)-1].GetTimestamp().GetSeconds()-evs[0].GetTimestamp().GetSeconds() >= batchAge {
		t.flushBatch()
	}
}

func (t *tracer) addToBatch(ev *datatapv3.SocketEvent) {
	if t.batch == nil {
		t.batch = &datatapv3.SocketEvents{}
	}
	t.batch.Events = append(t.batch.Events, ev)
}

// flushBatch sends the gathered events as one segment.
func (t *tracer) flushBatch() {
	t.submitSegment(&datatapv3.SocketStreamedTraceSegment{MessagePiece: &datatapv3.SocketStreamedTraceSegment_Events{Events: t.batch}})
	t.batch, t.batchBytes = nil, 0
}

func (t *tracer) submitSegment(seg *datatapv3.SocketStreamedTraceSegment) {
	seg.TraceId = t.id
	t.submit(&datatapv3.TraceWrapper{Trace: &datatapv3.TraceWrapper_SocketStreamedTraceSegment{SocketStreamedTraceSegment: seg}})
}

// submit sends a streamed segment to the sink.
func (t *tracer) submit(w *datatapv3.TraceWrapper) {
	t.cfg.Sink.Submit(w, t.id)
	t.s.streamed.Inc()
}

// body is the first limit bytes of p (truncated when p is longer), as
// bytes, or as a string with JSON_BODY_AS_STRING when it is valid UTF-8.
func (t *tracer) body(p []byte, limit int) *datatapv3.Body {
	limit = max(limit, 0)
	b := &datatapv3.Body{}
	if len(p) > limit {
		p, b.Truncated = p[:limit], true
	}
	if t.cfg.Format == tapv3.OutputSink_JSON_BODY_AS_STRING && utf8.Valid(p) {
		b.BodyType = &datatapv3.Body_AsString{AsString: string(p)}
	} else {
		b.BodyType = &datatapv3.Body_AsBytes{AsBytes: append([]byte(nil), p...)}
	}
	return b
}
