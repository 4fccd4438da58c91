package xds

import (
	"runtime/debug"
	"runtime/metrics"
)

// heldGCResources is the number of resources from which a response is
// decoded and applied with the collector held off (holdGC): a response of
// thousands of clusters or assignments builds a heap several times the
// one before it, and the collector, paced on the smaller heap, ran a cycle
// at each doubling, marking the growing heap again each time (about a
// tenth of the CPU of applying 10,000 clusters, and its write barriers on
// for most of the rest).
const heldGCResources = 1000

// heldGCHeadroom is how far the heap may grow past the collector's goal
// while it is held off: the soft memory limit set meanwhile. A response
// that allocates more gets a collection at that limit, as any program
// under a memory limit does.
const heldGCHeadroom = 256 << 20

// holdGC turns the collector off (debug.SetGCPercent(-1)) with a soft
// memory limit of the current heap goal plus heldGCHeadroom (or the limit
// already set, if lower), and returns the function that puts both back;
// the runtime then collects at once, if the heap grew past the goal of its
// restored pacing, marking the grown heap once.
//
// The settings are the process's. A collector already off (GOGC=off, or
// another update holding it) is left alone and the returned function does
// nothing, so that overlapping holds never leave it off: the first to end
// turns it back on.
func holdGC() (release func()) {
	percent := debug.SetGCPercent(-1)
	if percent < 0 {
		debug.SetGCPercent(percent)
		return func() {}
	}
	sample := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(sample)
	limit := int64(heldGCHeadroom)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		limit += int64(min(sample[0].Value.Uint64(), 1<<40))
	}
	previous := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(previous, limit))
	return func() {
		debug.SetMemoryLimit(previous)
		debug.SetGCPercent(percent)
	}
}
