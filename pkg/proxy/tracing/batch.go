package tracing

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// closeGrace bounds the last export when a batcher is closed.
const closeGrace = time.Second

// Exporter sends one batch of finished spans to a collector. It runs on
// the batcher's goroutine only, within ctx, and must not keep the spans or
// their strings: they are recycled when it returns. ctx's deadline is the
// export's timeout, which the exporter applies itself (a connection
// deadline, a call's own context): no timer ends ctx at that time, its
// Done only reports that the batcher's close grace is over.
type Exporter interface {
	Export(ctx context.Context, spans []*Span) error
}

// EncodedExporter is an Exporter that also sends spans its driver's
// SpanEncoder wrote as they finished: n spans, their encodings joined in
// enc, in the order they finished. It must not keep enc.
type EncodedExporter interface {
	Exporter
	ExportEncoded(ctx context.Context, enc []byte, n int) error
}

// BatchOptions configure a Batcher.
type BatchOptions struct {
	// StatPrefix scopes the counters: "tracing.opentelemetry.",
	// "tracing.zipkin.".
	StatPrefix string
	// RuntimePrefix prefixes the runtime keys Envoy reads for the tracer:
	// <prefix>flush_interval_ms (default 5000), <prefix>min_flush_spans
	// (default 5) and <prefix>request_timeout (default 5000 ms).
	RuntimePrefix string
	// MaxBuffered bounds the spans waiting for export; later ones are
	// dropped and counted in spans_dropped.
	MaxBuffered int
	// Target names the collector in logs.
	Target string
	// FailedStat names the counter of exports that failed:
	// "reports_failed" unless set (Zipkin's is "reports_dropped").
	FailedStat string
}

// DefaultMaxBuffered is the bound of spans waiting for export.
const DefaultMaxBuffered = 8192

// Batcher buffers finished spans and exports them in batches, from a
// goroutine of its own, every flush interval and whenever min_flush_spans
// are waiting, as Envoy's tracers do. Report never blocks: when the
// collector is slow or down, the buffer fills and spans are dropped.
type Batcher struct {
	exp  Exporter
	opts BatchOptions
	rt   Runtime
	log  logr.Logger

	spansSent, timerFlushed, dropped, reportsSent, reportsFailed *stats.Counter

	// The runtime keys, built once: Report reads min_flush_spans for
	// every span.
	keyMinFlush, keyInterval, keyTimeout string

	mu     sync.Mutex
	buf    []*Span
	closed bool
	// spare is the slice of the last export, which the next take swaps
	// with buf: the buffer is not grown again for every batch.
	spare []*Span
	// enc holds the spans reported encoded (ReportEncoded), nEnc of
	// them, and spareEnc the buffer of the last export, swapped as spare.
	enc, spareEnc []byte
	nEnc          int

	// kick wakes the exporting goroutine: min_flush_spans reached, the
	// flush timer's turn (due), or Close (stopping). One channel, so that
	// the goroutine parks in a plain receive: a select over a timer's
	// channel and two others locked the three channels and put the timer
	// in and out of the runtime's heap at every wake-up, one per export.
	kick          chan struct{}
	due, stopping atomic.Bool
	timer         *time.Timer
	done          chan struct{}
	// ctx ends exports: cancelled when the last export's grace is over.
	ctx    context.Context
	cancel context.CancelFunc

	loggedError bool
	// exportCtx is the context of the export under way, reused.
	exportCtx exportContext

	// snapshots tells the runtime's current snapshot when the runtime
	// can (nil otherwise: min_flush_spans is then read per span); minFlush
	// holds min_flush_spans as read in the snapshot it names, which
	// Report, for every span, reuses while the snapshot is the same.
	snapshots runtimeSnapshots
	minFlush  atomic.Pointer[flushSetting]
}

// runtimeSnapshots is a runtime (the server's) that tells its current
// snapshot, an immutable value.
type runtimeSnapshots interface {
	Snapshot() *runtime.Snapshot
}

// flushSetting is min_flush_spans as read in one runtime snapshot.
type flushSetting struct {
	snap *runtime.Snapshot
	n    uint64
}

// exportContext is an export's context: the batcher's, which ends when its
// close grace is over, with the export's deadline. The deadline arms no
// timer: the exporters apply it themselves (a connection deadline, a gRPC
// call's context). A timer armed and stopped for every export was a third
// of the batcher's CPU time at Envoy's default of an export every 5 spans.
type exportContext struct {
	context.Context
	deadline time.Time
}

// Deadline implements context.Context.
func (c *exportContext) Deadline() (time.Time, bool) { return c.deadline, true }

// NewBatcher starts a batcher exporting through exp.
func NewBatcher(exp Exporter, opts BatchOptions, ctx Context) *Batcher {
	st := ctx.Stats
	if st == nil {
		st = stats.NewStore()
	}
	if opts.FailedStat == "" {
		opts.FailedStat = "reports_failed"
	}
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = DefaultMaxBuffered
	}
	sc := st.Scope(opts.StatPrefix)
	b := &Batcher{
		exp:           exp,
		opts:          opts,
		rt:            ctx.Runtime,
		log:           ctx.Log,
		spansSent:     sc.Counter("spans_sent"),
		timerFlushed:  sc.Counter("timer_flushed"),
		dropped:       sc.Counter("spans_dropped"),
		reportsSent:   sc.Counter("reports_sent"),
		reportsFailed: sc.Counter(opts.FailedStat),
		kick:          make(chan struct{}, 1),
		done:          make(chan struct{}),
		keyMinFlush:   opts.RuntimePrefix + "min_flush_spans",
		keyInterval:   opts.RuntimePrefix + "flush_interval_ms",
		keyTimeout:    opts.RuntimePrefix + "request_timeout",
	}
	if b.log.GetSink() == nil {
		b.log = logr.Discard()
	}
	b.snapshots, _ = ctx.Runtime.(runtimeSnapshots)
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.timer = time.AfterFunc(b.interval(), func() {
		b.due.Store(true)
		b.wake()
	})
	go b.run()
	return b
}

// interval is the runtime's flush_interval_ms (Envoy's default 5000).
func (b *Batcher) interval() time.Duration {
	ms := b.runtime(b.keyInterval, 5000)
	if ms == 0 {
		ms = 1
	}
	return time.Duration(ms) * time.Millisecond
}

// wake wakes the exporting goroutine, unless a wake-up is pending.
func (b *Batcher) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// runtime reads one of the tracer's runtime values, by its full key.
func (b *Batcher) runtime(key string, def uint64) uint64 {
	if b.rt == nil {
		return def
	}
	return b.rt.Uint64(key, def)
}

// Report implements Reporter: the span waits for the next export, or is
// dropped when the buffer is full.
func (b *Batcher) Report(s *Span) {
	b.mu.Lock()
	if b.closed || len(b.buf)+b.nEnc >= b.opts.MaxBuffered {
		b.mu.Unlock()
		b.dropped.Inc()
		s.Release()
		return
	}
	b.buf = append(b.buf, s)
	n := len(b.buf) + b.nEnc
	b.mu.Unlock()
	b.kickAt(n)
}

// ReportEncoded implements EncodedReporter: the span is encoded by e
// where it waits for the next export (no copy of its bytes), or dropped
// when the buffer is full. Only a batcher whose exporter is an
// EncodedExporter may be given spans this way.
func (b *Batcher) ReportEncoded(e SpanEncoder, s *Span) {
	b.mu.Lock()
	if b.closed || len(b.buf)+b.nEnc >= b.opts.MaxBuffered {
		b.mu.Unlock()
		b.dropped.Inc()
		return
	}
	b.enc = e.AppendSpan(b.enc, s)
	b.nEnc++
	n := len(b.buf) + b.nEnc
	b.mu.Unlock()
	b.kickAt(n)
}

// kickAt wakes the exporting goroutine when n spans wait, at
// min_flush_spans.
func (b *Batcher) kickAt(n int) {
	if uint64(n) >= b.minFlushSpans() {
		b.wake()
	}
}

// minFlushSpans is the runtime's min_flush_spans (Envoy's default 5),
// read once per runtime snapshot when the runtime tells its snapshots:
// Report reads it for every span, and a look-up by key was two map reads
// behind interface calls. Workers race to store a new reading
// harmlessly: each is complete and names its snapshot.
func (b *Batcher) minFlushSpans() uint64 {
	if b.snapshots == nil {
		return b.runtime(b.keyMinFlush, 5)
	}
	snap := b.snapshots.Snapshot()
	if f := b.minFlush.Load(); f != nil && f.snap == snap {
		return f.n
	}
	f := &flushSetting{snap: snap, n: snap.Uint64(b.keyMinFlush, 5)}
	b.minFlush.Store(f)
	return f.n
}

// run exports on the timer and when kicked, until Close.
func (b *Batcher) run() {
	defer close(b.done)
	defer b.timer.Stop()
	for range b.kick {
		switch {
		case b.stopping.Load():
			b.flush()
			return
		case b.due.Swap(false):
			// The timer's turn: what waits goes now, and the timer is
			// armed again from here, as Envoy's tracers re-enable
			// theirs after each flush.
			b.timerFlushed.Inc()
			b.flush()
			b.timer.Reset(b.interval())
		default:
			b.gather()
			b.flush()
		}
	}
}

// gatherYields bounds the yields of gather: the export waits for at most
// that many turns of the runnable goroutines.
const gatherYields = 4

// gather lets the goroutines already runnable finish their spans into the
// export the kick asked for. The kick made this goroutine the next to run
// on its P, ahead of the connections already ready, whose requests are
// about to finish more spans; each yield lets them run first, and the
// export starts once a yield added no span (or after gatherYields). Every
// span a batch gains saves an export's write, read, deadline and two
// wake-ups. The flush rule is unchanged: the export still follows the
// kick, after work that was already runnable, never a timer.
func (b *Batcher) gather() {
	n := b.waiting()
	for range gatherYields {
		goruntime.Gosched()
		m := b.waiting()
		if m == n {
			return
		}
		n = m
	}
}

// waiting is the number of spans waiting for export.
func (b *Batcher) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf) + b.nEnc
}

// take empties the buffers: what they held is returned (the spans, and
// the encoded spans with their number), and each buffer becomes that of
// the last export, emptied.
func (b *Batcher) take() (spans []*Span, enc []byte, nEnc int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	spans, enc, nEnc = b.buf, b.enc, b.nEnc
	b.buf, b.spare = b.spare[:0], nil
	b.enc, b.spareEnc, b.nEnc = b.spareEnc[:0], nil, 0
	return spans, enc, nEnc
}

// recycle keeps the buffers of an export, its spans released, for a later
// take.
func (b *Batcher) recycle(spans []*Span, enc []byte) {
	clear(spans)
	b.mu.Lock()
	b.spare, b.spareEnc = spans[:0], enc[:0]
	b.mu.Unlock()
}

// flush exports what is buffered: the spans reported as spans, and those
// reported encoded, each kind in one export (a driver reports one kind).
func (b *Batcher) flush() {
	spans, enc, nEnc := b.take()
	defer func() {
		for _, s := range spans {
			s.Release()
		}
		b.recycle(spans, enc)
	}()
	if len(spans) > 0 {
		b.export(len(spans), func(ctx context.Context) error { return b.exp.Export(ctx, spans) })
	}
	if nEnc > 0 {
		b.export(nEnc, func(ctx context.Context) error {
			return b.exp.(EncodedExporter).ExportEncoded(ctx, enc, nEnc)
		})
	}
}

// export runs one export of n spans, counting it.
func (b *Batcher) export(n int, send func(context.Context) error) {
	timeout := time.Duration(b.runtime(b.keyTimeout, 5000)) * time.Millisecond
	b.exportCtx = exportContext{Context: b.ctx, deadline: time.Now().Add(timeout)}
	b.spansSent.Add(uint64(n))
	b.reportsSent.Inc()
	if err := send(&b.exportCtx); err != nil {
		b.reportsFailed.Inc()
		if !b.loggedError {
			b.loggedError = true
			b.log.Info("cannot export spans", "collector", b.opts.Target, "spans", n, "error", err.Error())
		}
		return
	}
	b.loggedError = false
}

// Close stops the batcher: later spans are dropped, what is buffered is
// exported within closeGrace.
func (b *Batcher) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.stopping.Store(true)
	b.wake()
	timer := time.AfterFunc(closeGrace, b.cancel)
	<-b.done
	timer.Stop()
	b.cancel()
	return nil
}
