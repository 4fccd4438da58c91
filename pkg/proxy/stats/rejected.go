package stats

import "sync"

// rejectedStats holds the stats whose names the stats matcher rejects.
// Components still count into them (a component may read its own stats),
// but they are in no tree, so no renderer or sink sees them. They are keyed
// by full name, which is acceptable because configurations reject few,
// rarely used families.
type rejectedStats struct {
	mu         sync.Mutex
	counters   map[string]*Counter
	gauges     map[string]*Gauge
	texts      map[string]*TextReadout
	histograms map[string]*Histogram
}

func rejectedGet[T any](mu *sync.Mutex, m *map[string]*T, name string, init func(*T)) *T {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = map[string]*T{}
	}
	v, ok := (*m)[name]
	if !ok {
		v = new(T)
		if init != nil {
			init(v)
		}
		(*m)[name] = v
	}
	return v
}

func (r *rejectedStats) counter(name string) *Counter {
	return rejectedGet(&r.mu, &r.counters, name, nil)
}

func (r *rejectedStats) gauge(name string) *Gauge {
	return rejectedGet(&r.mu, &r.gauges, name, nil)
}

func (r *rejectedStats) textReadout(name string) *TextReadout {
	return rejectedGet(&r.mu, &r.texts, name, nil)
}

func (r *rejectedStats) histogram(name string, shards int, empty *HistogramStatistics, unit Unit) *Histogram {
	return rejectedGet(&r.mu, &r.histograms, name, func(h *Histogram) { h.init(shards, empty, unit) })
}

func (r *rejectedStats) resetCounters() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.counters {
		c.resetLocal()
	}
}
