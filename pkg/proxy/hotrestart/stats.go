package hotrestart

import "strings"

// GaugeImported reports whether a parent's gauge is added into the
// child's (Envoy's Accumulate import mode) rather than left alone
// (NeverImport): the server's and the runtime's own gauges describe one
// process (its uptime, memory, state, epoch), every other gauge (active
// connections, requests, listeners) sums over both processes.
func GaugeImported(name string) bool {
	return !strings.HasPrefix(name, "server.") && !strings.HasPrefix(name, "runtime.")
}

// StatsTarget is where imported stats go (the child's store).
type StatsTarget interface {
	AddCounter(name string, delta uint64)
	AddGauge(name string, delta int64)
}

// StatsMerger adds a parent's stats into the child's as they move: each
// counter's growth since the last merge is added, and each imported
// gauge's change; when the parent goes, its gauges are taken out again,
// as its connections are gone with it. Counters stay: they count all
// epochs.
type StatsMerger struct {
	counters map[string]uint64
	gauges   map[string]int64
}

// NewStatsMerger returns a merger with nothing merged yet.
func NewStatsMerger() *StatsMerger {
	return &StatsMerger{counters: map[string]uint64{}, gauges: map[string]int64{}}
}

// Merge adds the change since the last Merge of the parent's stats.
func (m *StatsMerger) Merge(t StatsTarget, counters map[string]uint64, gauges map[string]int64) {
	for name, v := range counters {
		if last := m.counters[name]; v > last {
			t.AddCounter(name, v-last)
			m.counters[name] = v
		}
	}
	for name, v := range gauges {
		if !GaugeImported(name) {
			continue
		}
		if d := v - m.gauges[name]; d != 0 {
			t.AddGauge(name, d)
			m.gauges[name] = v
		}
	}
}

// ParentGone removes the parent's gauges from the child's.
func (m *StatsMerger) ParentGone(t StatsTarget) {
	for name, v := range m.gauges {
		if v != 0 {
			t.AddGauge(name, -v)
		}
	}
	clear(m.gauges)
}
