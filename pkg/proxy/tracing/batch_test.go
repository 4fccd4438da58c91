package tracing

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fakeExporter records batches; while block is set it waits for release.
type fakeExporter struct {
	mu      sync.Mutex
	batches [][]*Span
	fail    error
	block   chan struct{}
	entered sync.Once
	inside  chan struct{}
}

func (e *fakeExporter) Export(ctx context.Context, spans []*Span) error {
	if e.block != nil {
		e.entered.Do(func() { close(e.inside) })
		select {
		case <-e.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batches = append(e.batches, spans)
	return e.fail
}

func (e *fakeExporter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, b := range e.batches {
		n += len(b)
	}
	return n
}

// fixedRuntime is a fixed runtime.
type fixedRuntime map[string]uint64

func (r fixedRuntime) Uint64(k string, def uint64) uint64 {
	if v, ok := r[k]; ok {
		return v
	}
	return def
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func counter(st *stats.Store, name string) uint64 {
	return st.Scope("t.").Counter(name).Value()
}

func TestBatcherExportsAtMinFlushSpans(t *testing.T) {
	exp := &fakeExporter{}
	st := stats.NewStore()
	b := NewBatcher(exp, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t."}, Context{Stats: st, Runtime: fixedRuntime{"t.min_flush_spans": 2, "t.flush_interval_ms": 3600000}})
	s := NewSpan(b, nil)
	s.Sampled = true
	s.Finish(time.Now())
	if exp.count() != 0 {
		t.Fatal("exported before min_flush_spans")
	}
	s2 := NewSpan(b, nil)
	s2.Sampled = true
	s2.Finish(time.Now())
	waitFor(t, "the batch", func() bool { return exp.count() == 2 })
	// Unsampled spans are never reported.
	u := NewSpan(b, nil)
	u.Finish(time.Now())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if exp.count() != 2 || counter(st, "spans_sent") != 2 || counter(st, "reports_sent") != 1 {
		t.Errorf("exported %d, spans_sent %d, reports_sent %d", exp.count(), counter(st, "spans_sent"), counter(st, "reports_sent"))
	}
}

func TestBatcherDropsWhenFullAndNeverBlocks(t *testing.T) {
	exp := &fakeExporter{block: make(chan struct{}), inside: make(chan struct{}), fail: errors.New("refused")}
	st := stats.NewStore()
	b := NewBatcher(exp, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t.", MaxBuffered: 3}, Context{Stats: st, Runtime: fixedRuntime{"t.min_flush_spans": 1}})
	// The first span is taken by an export that blocks; the buffer then
	// holds three more; the rest are dropped, without waiting.
	report := func() {
		s := NewSpan(b, nil)
		s.Sampled = true
		s.Finish(time.Now())
	}
	report()
	<-exp.inside
	for range 9 {
		report()
	}
	if d := counter(st, "spans_dropped"); d != 6 {
		t.Errorf("spans_dropped = %d, want 6", d)
	}
	close(exp.block)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if counter(st, "reports_failed") == 0 {
		t.Error("failed exports were not counted")
	}
	// After Close, spans are dropped.
	before := counter(st, "spans_dropped")
	s := NewSpan(b, nil)
	s.Sampled = true
	s.Finish(time.Now())
	if counter(st, "spans_dropped") != before+1 {
		t.Error("a span reported after Close was not dropped")
	}
}

func TestSpanTagsAndChild(t *testing.T) {
	s := NewSpan(nil, nil)
	s.Trace, s.ID, s.Sampled = NewTraceID(false), NewSpanID(), true
	s.SetTag("a", "1")
	s.SetTag("a", "2")
	s.SetTag("", "ignored")
	if v, _ := s.Tag("a"); v != "2" || len(s.Tags) != 1 {
		t.Errorf("tags = %+v", s.Tags)
	}
	c := s.Child("router up egress", time.Now())
	if c.Trace != s.Trace || c.Parent != s.ID || c.ID == s.ID || c.Kind != Client || !c.Sampled {
		t.Errorf("child = %+v", c)
	}
	if short := NewTraceID(true); short[0] != 0 || short.IsZero() {
		t.Errorf("64-bit trace id = %s", short.Hex())
	}
}

// deadlineExporter records the deadline of each export's context.
type deadlineExporter struct {
	got chan time.Time
}

func (e *deadlineExporter) Export(ctx context.Context, _ []*Span) error {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Time{}
	}
	e.got <- d
	return nil
}

// TestBatcherExportDeadline checks that an export's context carries
// request_timeout as its deadline.
func TestBatcherExportDeadline(t *testing.T) {
	exp := &deadlineExporter{got: make(chan time.Time, 4)}
	b := NewBatcher(exp, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t."}, Context{Runtime: fixedRuntime{"t.min_flush_spans": 1, "t.request_timeout": 60000}})
	defer b.Close()
	before := time.Now()
	s := NewSpan(b, nil)
	s.Sampled = true
	s.Finish(time.Now())
	select {
	case d := <-exp.got:
		if d.Before(before.Add(59*time.Second)) || d.After(time.Now().Add(61*time.Second)) {
			t.Errorf("export deadline %v after the report, want request_timeout's 60 s", d.Sub(before))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no export")
	}
}

// TestReleaseResetsEveryField checks that a released span keeps nothing
// of its request but its buffers, emptied, and its id generator: every
// field, including any added later, is checked.
func TestReleaseResetsEveryField(t *testing.T) {
	var pool SpanPool
	s := pool.Get(&Batcher{}, nil)
	s.Trace, s.ID, s.Parent = NewTraceID(false), NewSpanID(), NewSpanID()
	s.Name, s.TraceState, s.Kind, s.Sampled, s.Shared = "n", "a=b", Client, true, true
	s.Start, s.End = time.Now(), time.Now()
	s.SetTag("k", "v")
	s.Log(time.Now(), "e")
	s.Scratch = append(s.Scratch, 'x')
	s.Release()
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if name == "rng" {
			// The generator's state goes on from span to span.
			continue
		}
		if f.Kind() == reflect.Slice {
			if f.Len() != 0 {
				t.Errorf("%s has %d elements after Release", name, f.Len())
			}
			continue
		}
		if !f.IsZero() {
			t.Errorf("%s = %v after Release, want zero", name, f)
		}
	}
}

// TestSpanIDsAreDistinct draws ids from pooled spans, reused and new, and
// from spans outside a pool: none is zero and none repeats (two equal
// 64-bit random draws among these would happen once in about 2^44 runs).
func TestSpanIDsAreDistinct(t *testing.T) {
	var pool SpanPool
	seen := map[SpanID]bool{}
	traces := map[TraceID]bool{}
	for i := range 2000 {
		s := pool.Get(nil, nil)
		if i%2 == 1 {
			s = NewSpan(nil, nil)
		}
		id, trace, short := s.NewSpanID(), s.NewTraceID(false), s.NewTraceID(true)
		if id.IsZero() || trace.IsZero() || short.IsZero() || !short.IsZero() && [8]byte(short[:8]) != [8]byte{} {
			t.Fatalf("ids %v %v %v: a zero id or a short trace id with a high half", id, trace, short)
		}
		if seen[id] || traces[trace] {
			t.Fatalf("id %x or trace %x drawn twice", id, trace)
		}
		seen[id], traces[trace] = true, true
		s.Release()
	}
}

// snapshotRuntime is the server's view of a runtime: the latest
// snapshot's values, and the snapshot itself.
type snapshotRuntime struct{ rt *runtime.Runtime }

func (v snapshotRuntime) Uint64(key string, def uint64) uint64 {
	return v.rt.Snapshot().Uint64(key, def)
}
func (v snapshotRuntime) Snapshot() *runtime.Snapshot { return v.rt.Snapshot() }

// TestMinFlushFollowsSnapshots: min_flush_spans, read once per runtime
// snapshot, is Envoy's default without a value, and a new snapshot
// (/runtime_modify) is read again.
func TestMinFlushFollowsSnapshots(t *testing.T) {
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatcher(&fakeExporter{}, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t."}, Context{Runtime: snapshotRuntime{rt}})
	defer b.Close()
	if got := b.minFlushSpans(); got != 5 {
		t.Fatalf("min_flush_spans without a value = %d, want Envoy's 5", got)
	}
	if err := rt.Modify(map[string]string{"t.min_flush_spans": "100"}); err != nil {
		t.Fatal(err)
	}
	if got := b.minFlushSpans(); got != 100 {
		t.Fatalf("min_flush_spans after a modify = %d, want 100", got)
	}
	if f := b.minFlush.Load(); f == nil || f.snap != rt.Snapshot() {
		t.Fatal("the reading of the current snapshot is not kept")
	}
	if err := rt.Modify(map[string]string{"t.min_flush_spans": "7"}); err != nil {
		t.Fatal(err)
	}
	if got := b.minFlushSpans(); got != 7 {
		t.Fatalf("min_flush_spans after a second modify = %d, want 7", got)
	}
}

// encodedExporter is a fakeExporter that also takes encoded spans.
type encodedExporter struct {
	fakeExporter
	encoded []string
	counts  []int
}

func (e *encodedExporter) ExportEncoded(_ context.Context, enc []byte, n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.encoded = append(e.encoded, string(enc))
	e.counts = append(e.counts, n)
	return nil
}

func (e *encodedExporter) exports() ([]string, []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.encoded), slices.Clone(e.counts)
}

// nameEncoder is a SpanEncoder writing a span's name.
type nameEncoder struct{}

func (nameEncoder) AppendSpan(b []byte, s *Span) []byte { return append(b, s.Name...) }

// reportNamed reports a span of that name encoded.
func reportNamed(b *Batcher, name string) {
	s := NewSpan(nil, nil)
	s.Name = name
	b.ReportEncoded(nameEncoder{}, s)
	// Encoded at once: the span may change afterwards.
	s.Name = "changed"
}

// TestBatcherExportsEncodedSpans: spans reported encoded are written at
// once, joined in the order they came, counted towards min_flush_spans
// and max_cache_size like spans, and exported together.
func TestBatcherExportsEncodedSpans(t *testing.T) {
	exp := &encodedExporter{}
	st := stats.NewStore()
	b := NewBatcher(exp, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t.", MaxBuffered: 4},
		Context{Stats: st, Runtime: fixedRuntime{"t.min_flush_spans": 3, "t.flush_interval_ms": 3600000}})
	reportNamed(b, "one")
	reportNamed(b, "two")
	if enc, _ := exp.exports(); len(enc) != 0 {
		t.Fatal("exported before min_flush_spans")
	}
	reportNamed(b, "333")
	waitFor(t, "the batch", func() bool { enc, _ := exp.exports(); return len(enc) == 1 })
	if enc, n := exp.exports(); enc[0] != "onetwo333" || n[0] != 3 {
		t.Errorf("exported %q (%v spans), want onetwo333 (3)", enc, n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if counter(st, "spans_sent") != 3 || counter(st, "reports_sent") != 1 {
		t.Errorf("spans_sent %d, reports_sent %d", counter(st, "spans_sent"), counter(st, "reports_sent"))
	}
	reportNamed(b, "late")
	if counter(st, "spans_dropped") != 1 {
		t.Error("a span reported encoded after Close was not dropped")
	}
}

// TestBatcherBoundsEncodedSpans: spans and encoded spans share
// max_cache_size.
func TestBatcherBoundsEncodedSpans(t *testing.T) {
	exp := &encodedExporter{}
	st := stats.NewStore()
	b := NewBatcher(exp, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t.", MaxBuffered: 3},
		Context{Stats: st, Runtime: fixedRuntime{"t.min_flush_spans": 100, "t.flush_interval_ms": 3600000}})
	for range 2 {
		s := NewSpan(b, nil)
		s.Sampled = true
		s.Finish(time.Now())
	}
	reportNamed(b, "a")
	reportNamed(b, "b")
	s := NewSpan(b, nil)
	s.Sampled = true
	s.Finish(time.Now())
	if d := counter(st, "spans_dropped"); d != 2 {
		t.Errorf("spans_dropped = %d, want 2", d)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if enc, n := exp.exports(); exp.count() != 2 || len(enc) != 1 || enc[0] != "a" || n[0] != 1 {
		t.Errorf("exported %d spans and %q (%v)", exp.count(), enc, n)
	}
}

// TestBatcherFlushesOnInterval: below min_flush_spans, the spans go at
// the flush interval, counted in timer_flushed, and the timer is armed
// again after each flush; Close exports what is left.
func TestBatcherFlushesOnInterval(t *testing.T) {
	exp := &fakeExporter{}
	st := stats.NewStore()
	b := NewBatcher(exp, BatchOptions{StatPrefix: "t.", RuntimePrefix: "t."}, Context{Stats: st, Runtime: fixedRuntime{"t.min_flush_spans": 100, "t.flush_interval_ms": 20}})
	report := func() {
		s := NewSpan(b, nil)
		s.Sampled = true
		s.Finish(time.Now())
	}
	report()
	report()
	waitFor(t, "the first timed flush", func() bool { return exp.count() == 2 })
	flushed := counter(st, "timer_flushed")
	if flushed == 0 {
		t.Fatal("timer_flushed not counted")
	}
	report()
	waitFor(t, "a later timed flush", func() bool { return exp.count() == 3 })
	if counter(st, "timer_flushed") <= flushed {
		t.Error("the later flush was not the timer's")
	}
	waitFor(t, "more turns of the timer", func() bool { return counter(st, "timer_flushed") >= flushed+3 })
	// Empty turns export nothing.
	if n := counter(st, "reports_sent"); n != 2 {
		t.Errorf("reports_sent = %d, want 2", n)
	}
	// Close exports what waits, once, then drops.
	b2 := NewBatcher(exp, BatchOptions{StatPrefix: "u.", RuntimePrefix: "t."}, Context{Stats: st, Runtime: fixedRuntime{"t.min_flush_spans": 100}})
	s := NewSpan(b2, nil)
	s.Sampled = true
	s.Finish(time.Now())
	if err := b2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if exp.count() != 4 {
		t.Errorf("exported %d spans after Close, want 4", exp.count())
	}
}
