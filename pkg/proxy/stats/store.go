package stats

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
)

// Store owns every stat of one server. Looking a stat up by name takes a
// lock and a few hash probes; components do it once and keep the pointer.
type Store struct {
	mu     sync.Mutex
	segIDs map[string]uint32 // segment text -> id
	segs   slab[string]
	// segCache finds the ids of constant segments without hashing them.
	segCache segmentCache
	index    childIndex    // (parent node, segment|kind) -> node or stat entry
	young    youngChildren // the children of the newest nodes, again
	// lastPrefix is the last scope prefix resolved under each root (see
	// resolvePrefix).
	lastPrefix [numRoots]prefixCache
	nodes      slab[prefixNode]
	pending    []childAdd // stats added since the last sort
	// pendingPrefixes are the prefix nodes added since the last render:
	// apart, so that restartYoung merges the stats alone without
	// passing over them.
	pendingPrefixes []childAdd
	memo            sortMemo // walk-order permutations of runs of children
	groups          nodeGroups
	counters        slab[Counter]
	gauges          slab[Gauge]
	texts           slab[TextReadout]
	hists           slab[Histogram]
	rejected        rejectedStats
	lazies          slab[lazyStat] // declared counters (see lazy.go)
	// templates are the segment ids of each template's names, and
	// blockScratch NewBlock's scratch space (see block.go).
	templates    map[*Template][]uint32
	blockScratch []uint32
	// zero is what a declared counter without a Counter renders from.
	zero     Counter
	lookups  recentLookups
	used     usedSet
	families familyIndex

	shards  int // per-histogram recording shards
	tags    *TagProducer
	matcher statsMatcher
	buckets []bucketRule
	// defaultEmpty is the empty summary of a histogram with the default
	// bounds, shared by every one that has not recorded.
	defaultEmpty *HistogramStatistics

	// flushMu serialises flushes, which own Counter.latched.
	flushMu sync.Mutex
}

// NewStore returns an empty store with Envoy's default tag extractors and
// no stats_config.
func NewStore() *Store {
	s, err := NewStoreWithConfig(nil)
	if err != nil {
		// The defaults are compiled from constants and tested.
		panic(fmt.Sprintf("stats: default configuration: %v", err))
	}
	return s
}

// NewStoreWithConfig returns an empty store honouring the bootstrap
// stats_config: stats_tags, use_all_default_tags, stats_matcher and
// histogram_bucket_settings. A nil cfg means the defaults.
func NewStoreWithConfig(cfg *metricsv3.StatsConfig) (*Store, error) {
	tags, err := NewTagProducer(cfg)
	if err != nil {
		return nil, err
	}
	matcher, err := newStatsMatcher(cfg.GetStatsMatcher())
	if err != nil {
		return nil, err
	}
	buckets, err := newBucketRules(cfg.GetHistogramBucketSettings())
	if err != nil {
		return nil, err
	}
	defaultEmpty := emptyStatistics(defaultBuckets[:])
	s := &Store{
		defaultEmpty: &defaultEmpty,
		segIDs:       map[string]uint32{},
		young:        youngChildren{children: map[nameKey]uint32{}},
		shards:       histogramShards(runtime.GOMAXPROCS(0)),
		tags:         tags,
		matcher:      matcher,
		buckets:      buckets,
	}
	for range numRoots {
		s.nodes.alloc()
	}
	return s, nil
}

// histogramShards returns the shard count for procs processors: the next
// power of two, so a shard is picked with a mask.
func histogramShards(procs int) int {
	n := 1
	for n < procs && n < maxHistogramShards {
		n <<= 1
	}
	return n
}

// TagProducer returns the store's tag extractor, for renderers and sinks.
func (s *Store) TagProducer() *TagProducer { return s.tags }

// lookup finds or creates the stat of kind k named prefix+name under root.
// The name comes in two parts so that a scope's stats are found and made
// without building their full names: prefix is empty or ends with a dot
// (see splitName), and the full name is only built for what needs it, a
// stats matcher, recent-lookup tracking or bucket rules. It returns the
// stat's tree entry, or ok=false when the stats matcher rejects the name.
// The caller holds s.mu; create is called for a new stat to allocate it in
// the slab of kind ek (k, or kindLazyCounter for a declared counter), name
// it and return its index.
func (s *Store) lookup(root uint32, k, ek Kind, prefix, name string, create func(parent, seg uint32) uint32) (e uint32, ok bool) {
	s.lookups.record(prefix, name)
	parent, seg, found := s.resolve(root, prefix, name, false)
	if found {
		if e, found := s.findChild(makeKey(parent, seg, k)); found {
			return e, true
		}
	}
	if !s.matcher.acceptsAll() && !s.matcher.accepts(prefix+name) {
		return 0, false
	}
	if !found {
		// Only a name with a new segment or prefix walks the tree twice:
		// a new stat of an existing scope reuses the first walk.
		parent, seg, _ = s.resolve(root, prefix, name, true)
	}
	if seg > maxSegments {
		// Half a billion distinct segments: treat like a rejected stat
		// rather than corrupt the tree.
		return 0, false
	}
	e = makeEntry(ek, create(parent, seg))
	// The index reads the key back from the stat, so it goes in after
	// create has named it.
	s.insertChild(makeKey(parent, seg, k), e)
	s.addChild(parent, e)
	return e, true
}

// splitName returns the two parts of the name prefix+name as lookup takes
// them: a prefix that does not end with a dot is joined to the name.
func splitName(prefix, name string) (string, string) {
	if prefix == "" || strings.HasSuffix(prefix, ".") {
		return prefix, name
	}
	return "", prefix + name
}

// Counter returns the counter with the full name, creating it on first use.
// A name the stats matcher rejects still gets a working counter, which is
// never listed.
func (s *Store) Counter(name string) *Counter { return s.counter("", name) }

func (s *Store) counter(prefix, name string) *Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counterLocked(prefix, name)
}

// counterLocked is counter with s.mu held.
func (s *Store) counterLocked(prefix, name string) *Counter {
	e, ok := s.lookup(rootCounters, KindCounter, KindCounter, prefix, name, s.newCounter)
	if !ok {
		return s.rejected.counter(prefix + name)
	}
	idx := entryIndex(e)
	if entryKind(e) == kindLazyCounter {
		idx = s.materialize(idx)
	}
	return s.counters.at(idx)
}

// Gauge returns the gauge with the full name, creating it on first use.
func (s *Store) Gauge(name string) *Gauge { return s.gauge("", name) }

func (s *Store) gauge(prefix, name string) *Gauge {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gaugeLocked(prefix, name)
}

// gaugeLocked is gauge with s.mu held.
func (s *Store) gaugeLocked(prefix, name string) *Gauge {
	e, ok := s.lookup(rootCounters, KindGauge, KindGauge, prefix, name, s.newGauge)
	if !ok {
		return s.rejected.gauge(prefix + name)
	}
	return s.gauges.at(entryIndex(e))
}

// TextReadout returns the text readout with the full name, creating it on
// first use.
func (s *Store) TextReadout(name string) *TextReadout { return s.textReadout("", name) }

func (s *Store) textReadout(prefix, name string) *TextReadout {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.lookup(rootTextReadouts, KindTextReadout, KindTextReadout, prefix, name, func(parent, seg uint32) uint32 {
		i, t := s.texts.alloc()
		t.store, t.parent = s, parent
		t.meta.Store(seg)
		return i
	})
	if !ok {
		return s.rejected.textReadout(prefix + name)
	}
	return s.texts.at(entryIndex(e))
}

// Histogram returns the histogram with the full name, creating it on first
// use with UnitUnspecified.
func (s *Store) Histogram(name string) *Histogram {
	return s.HistogramWithUnit(name, UnitUnspecified)
}

// HistogramWithUnit returns the histogram with the full name, creating it
// on first use with the given unit (which a later lookup cannot change).
// Its bucket bounds come from the first matching histogram_bucket_settings
// rule, else the defaults.
func (s *Store) HistogramWithUnit(name string, unit Unit) *Histogram {
	return s.histogram("", name, unit)
}

func (s *Store) histogram(prefix, name string, unit Unit) *Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.histogramLocked(prefix, name, unit)
}

// histogramLocked is histogram with s.mu held.
func (s *Store) histogramLocked(prefix, name string, unit Unit) *Histogram {
	e, ok := s.lookup(rootHistograms, KindHistogram, KindHistogram, prefix, name, func(parent, seg uint32) uint32 {
		return s.newHistogram(parent, seg, s.emptyFor(prefix, name), unit)
	})
	if !ok {
		return s.rejected.histogram(prefix+name, s.shards, s.emptyFor(prefix, name), unit)
	}
	return s.hists.at(entryIndex(e))
}

// newCounter allocates a counter named by its parent node and last
// segment and returns its slab index. The caller holds s.mu.
func (s *Store) newCounter(parent, seg uint32) uint32 {
	i, c := s.counters.alloc()
	c.store, c.parent = s, parent
	c.meta.Store(seg)
	return i
}

// newGauge is newCounter for a gauge.
func (s *Store) newGauge(parent, seg uint32) uint32 {
	i, g := s.gauges.alloc()
	g.store, g.parent = s, parent
	g.meta.Store(seg)
	return i
}

// newHistogram is newCounter for a histogram with the empty summary of
// its bucket bounds and its unit.
func (s *Store) newHistogram(parent, seg uint32, empty *HistogramStatistics, unit Unit) uint32 {
	i, h := s.hists.alloc()
	h.store, h.parent = s, parent
	h.meta.Store(seg)
	h.init(s.shards, empty, unit)
	return i
}

// CounterNames returns the names of every listed counter, sorted.
func (s *Store) CounterNames() []string { return s.names(KindCounter) }

// GaugeNames returns the names of every listed gauge, sorted.
func (s *Store) GaugeNames() []string { return s.names(KindGauge) }

func (s *Store) names(k Kind) []string {
	var out []string
	_ = s.Visit(VisitOptions{Type: typeOfKind(k)}, func(st *Stat) error {
		out = append(out, string(st.Name))
		return nil
	})
	return out
}

// ResetCounters zeroes every counter as the admin shows it. Sinks still
// receive the increments made before the reset at the next flush.
func (s *Store) ResetCounters() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	n := s.counters.len()
	s.mu.Unlock()
	for i := range n {
		s.counters.at(i).resetLocal()
	}
	s.rejected.resetCounters()
	s.lookups.clear()
}

// Scope prefixes names: Scope("server.").Counter("x") is "server.x".
type Scope struct {
	store  *Store
	prefix string
}

// Scope returns a scope whose stat names start with prefix.
func (s *Store) Scope(prefix string) Scope { return Scope{store: s, prefix: prefix} }

// Scope returns a nested scope: Scope("a.").Scope("b.") names "a.b.x".
func (sc Scope) Scope(prefix string) Scope { return Scope{store: sc.store, prefix: sc.prefix + prefix} }

// Prefix returns the scope's name prefix.
func (sc Scope) Prefix() string { return sc.prefix }

// Counter returns the scope's counter with the given short name.
func (sc Scope) Counter(name string) *Counter { return sc.store.counter(splitName(sc.prefix, name)) }

// Gauge returns the scope's gauge with the given short name.
func (sc Scope) Gauge(name string) *Gauge { return sc.store.gauge(splitName(sc.prefix, name)) }

// TextReadout returns the scope's text readout with the given short name.
func (sc Scope) TextReadout(name string) *TextReadout {
	return sc.store.textReadout(splitName(sc.prefix, name))
}

// Histogram returns the scope's histogram with the given short name.
func (sc Scope) Histogram(name string, unit Unit) *Histogram {
	prefix, name := splitName(sc.prefix, name)
	return sc.store.histogram(prefix, name, unit)
}
