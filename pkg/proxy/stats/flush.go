package stats

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// DefaultFlushInterval is stats_flush_interval when the bootstrap leaves
// it unset.
const DefaultFlushInterval = 5 * time.Second

// Sink receives every flush's snapshot. Flush is called from the flushing
// goroutine, one sink after another, so it should not block for long.
type Sink interface {
	Flush(snap *Snapshot) error
}

// Snapshot is what a flush hands to sinks: counter deltas since the
// previous flush, gauge values and histograms, of the used stats only. It
// is valid until Flush returns.
type Snapshot struct {
	store    *Store
	time     time.Time
	counters []counterDelta
	gauges   []uint32
	hists    []uint32
	name     []byte
}

type counterDelta struct {
	idx   uint32
	delta uint64
}

// Time returns when the flush started.
func (sn *Snapshot) Time() time.Time { return sn.time }

// TagProducer returns the tag extractor of the snapshot's store.
func (sn *Snapshot) TagProducer() *TagProducer { return sn.store.tags }

// Counters calls fn for every used counter with its increase since the
// previous flush (unaffected by /reset_counters) and its current value.
// name is reused for the next call.
func (sn *Snapshot) Counters(fn func(name []byte, delta, value uint64)) {
	for _, cd := range sn.counters {
		c := sn.store.counters.at(cd.idx)
		sn.name = sn.store.appendName(sn.name[:0], c.parent, c.meta.Load())
		fn(sn.name, cd.delta, c.Value())
	}
}

// Gauges calls fn for every used gauge. name is reused for the next call.
func (sn *Snapshot) Gauges(fn func(name []byte, value int64)) {
	for _, idx := range sn.gauges {
		g := sn.store.gauges.at(idx)
		sn.name = sn.store.appendName(sn.name[:0], g.parent, g.meta.Load())
		fn(sn.name, g.Value())
	}
}

// Histograms calls fn for every used histogram, whose interval statistics
// are those of the interval this flush closed. name is reused.
func (sn *Snapshot) Histograms(fn func(name []byte, h *Histogram)) {
	for _, idx := range sn.hists {
		h := sn.store.hists.at(idx)
		sn.name = sn.store.appendName(sn.name[:0], h.parent, h.meta.Load())
		fn(sn.name, h)
	}
}

// MergeHistograms rolls every histogram's interval: what was recorded since
// the previous merge becomes the interval summary and joins the cumulative
// one. Flush does the same as it takes its snapshot; tests and tools may
// call it directly.
func (s *Store) MergeHistograms() {
	s.mu.Lock()
	n := s.hists.len()
	s.mu.Unlock()
	for i := range n {
		if h := s.hists.at(i); h.Used() {
			h.merge()
		}
	}
}

// FlusherOptions configure a Flusher.
type FlusherOptions struct {
	// Interval is stats_flush_interval; zero means DefaultFlushInterval.
	Interval time.Duration
	// OnAdmin is stats_flush_on_admin: no timer; the admin flushes when
	// the stats endpoints are queried.
	OnAdmin bool
	// NewTicker makes the flush timer; nil means time.NewTicker. Tests
	// inject a channel they drive.
	NewTicker func(d time.Duration) (tick <-chan time.Time, stop func())
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// Log receives sink errors.
	Log logr.Logger
	// Dropped counts the flushes that did not happen
	// (server.dropped_stat_flushes): a flush requested while the previous
	// one is still running is skipped, as in Envoy, and so are the timer
	// ticks missed while a flush ran longer than the interval. Nil counts
	// nothing.
	Dropped *Counter
}

// Flusher flushes a store to its sinks: on a timer, or on demand.
type Flusher struct {
	store *Store
	sinks []Sink
	opts  FlusherOptions

	mu    sync.Mutex
	hooks []func()

	// running is set while a flush runs; a flush that finds it set is
	// dropped rather than queued behind it.
	running atomic.Bool
	// snap is reused by every flush (only one runs at a time, and sinks
	// may not keep it), so a flush does not reallocate its index slices.
	snap Snapshot
}

// NewFlusher returns a flusher of s to sinks.
func NewFlusher(s *Store, sinks []Sink, o FlusherOptions) *Flusher {
	if o.Interval <= 0 {
		o.Interval = DefaultFlushInterval
	}
	if o.NewTicker == nil {
		o.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Flusher{store: s, sinks: sinks, opts: o}
}

// OnAdmin reports whether the admin must call Flush before rendering.
func (f *Flusher) OnAdmin() bool { return f.opts.OnAdmin }

// Interval returns the flush interval.
func (f *Flusher) Interval() time.Duration { return f.opts.Interval }

// AddHook registers fn to run at the start of every flush, before the
// snapshot: the server refreshes its server.* gauges there.
func (f *Flusher) AddHook(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks = append(f.hooks, fn)
}

// Run flushes at every interval until ctx is done, then returns nil. With
// OnAdmin it only waits for ctx. Sink errors are logged, not returned: a
// sink that cannot be reached is tried again at the next flush.
func (f *Flusher) Run(ctx context.Context) error {
	if f.opts.OnAdmin {
		<-ctx.Done()
		return nil
	}
	tick, stop := f.opts.NewTicker(f.opts.Interval)
	defer stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case t := <-tick:
			if !last.IsZero() {
				f.countMissedTicks(t.Sub(last))
			}
			last = t
			_ = f.Flush()
		}
	}
}

// countMissedTicks counts as dropped the ticks that a slow flush made the
// timer skip: ticks carry their scheduled time, so a gap of n intervals
// between two delivered ticks means n-1 flushes did not happen.
func (f *Flusher) countMissedTicks(gap time.Duration) {
	missed := int64((gap+f.opts.Interval/2)/f.opts.Interval) - 1
	if missed > 0 && f.opts.Dropped != nil {
		f.opts.Dropped.Add(uint64(missed))
	}
}

// Close closes every sink that holds a resource (a connection, stream
// subscribers). Call it once Run has returned and after any final Flush.
func (f *Flusher) Close() error {
	var errs []error
	for _, sink := range f.sinks {
		if c, ok := sink.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Flush runs the hooks, rolls histogram intervals, latches counter deltas
// and hands the snapshot to every sink. It returns the sinks' errors
// joined (each is also logged); a failing sink does not stop the others.
// A Flush called while another is running returns nil at once and counts
// a dropped flush: the running one is about to deliver the same data.
func (f *Flusher) Flush() error {
	if !f.running.CompareAndSwap(false, true) {
		if f.opts.Dropped != nil {
			f.opts.Dropped.Inc()
		}
		return nil
	}
	defer f.running.Store(false)
	s := f.store
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	f.mu.Lock()
	hooks := f.hooks
	f.mu.Unlock()
	for _, h := range hooks {
		h()
	}
	sn := &f.snap
	*sn = Snapshot{store: s, time: f.opts.Now(), counters: sn.counters[:0], gauges: sn.gauges[:0], hists: sn.hists[:0], name: sn.name}
	s.mu.Lock()
	nc, ng, nh := s.counters.len(), s.gauges.len(), s.hists.len()
	s.mu.Unlock()
	for i := range nc {
		if c := s.counters.at(i); c.Used() {
			sn.counters = append(sn.counters, counterDelta{i, c.latch()})
		}
	}
	for i := range ng {
		if s.gauges.at(i).Used() {
			sn.gauges = append(sn.gauges, i)
		}
	}
	// Histogram intervals roll in the same walk that lists the used ones
	// (what MergeHistograms does), rather than in a walk of their own.
	for i := range nh {
		if h := s.hists.at(i); h.Used() {
			h.merge()
			sn.hists = append(sn.hists, i)
		}
	}
	var errs []error
	for _, sink := range f.sinks {
		if err := sink.Flush(sn); err != nil {
			f.opts.Log.Error(err, "stats sink flush failed")
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
