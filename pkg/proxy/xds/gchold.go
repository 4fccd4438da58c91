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

// holdGC is holdGC with the memory limit of the sidecar's cgroup, read
// at each hold (a pod's limit can be resized in place).
func (a *ADS) holdGC() (release func()) {
	return holdGC(cgroupMemoryMax(a.opts.HostRoot))
}

// heldGCCgroupShare is the share of the cgroup's memory limit the soft
// memory limit of a hold may reach: the Go runtime's count leaves out
// what the cgroup charges besides (the binary's pages, the kernel's
// socket buffers and page cache), so the heap stops short of it.
const heldGCCgroupShare = 0.875

// holdGC turns the collector off (debug.SetGCPercent(-1)) with a soft
// memory limit of the current heap goal plus heldGCHeadroom, or lower: the
// limit already set, and heldGCCgroupShare of memoryMax, the cgroup's
// memory limit (0 for none). It returns the function that puts both back;
// the runtime then collects at once, if the heap grew past the goal of its
// restored pacing, marking the grown heap once.
//
// A pod with a tight memory limit and no GOMEMLIMIT would otherwise let
// the heap grow 256 MiB past its goal and be killed by the kernel: with
// the cap, the collector runs at the cap as under GOMEMLIMIT. When the
// cap does not reach above the heap goal, holding would only collect
// sooner than the default pacing: nothing is held.
//
// The settings are the process's. A collector already off (GOGC=off, or
// another update holding it) is left alone and the returned function does
// nothing, so that overlapping holds never leave it off: the first to end
// turns it back on.
func holdGC(memoryMax uint64) (release func()) {
	// The goal is read while the collector is still on: off, the
	// runtime reports a goal of some 2^63 bytes (until session 24 the
	// limit was read after, and came to 1 TiB: no limit at all).
	sample := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(sample)
	percent := debug.SetGCPercent(-1)
	if percent < 0 {
		debug.SetGCPercent(percent)
		return func() {}
	}
	var goal int64
	if sample[0].Value.Kind() == metrics.KindUint64 {
		goal = int64(min(sample[0].Value.Uint64(), 1<<40))
	}
	limit := goal + heldGCHeadroom
	if memoryMax > 0 {
		limit = min(limit, int64(float64(min(memoryMax, 1<<50))*heldGCCgroupShare))
	}
	previous := debug.SetMemoryLimit(-1)
	limit = min(previous, limit)
	if limit <= goal {
		debug.SetGCPercent(percent)
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() {
		debug.SetMemoryLimit(previous)
		debug.SetGCPercent(percent)
	}
}
