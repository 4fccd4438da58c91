package overload

import (
	"errors"
	"runtime/metrics"
)

// heapMetrics are the runtime/metrics samples that add up to the heap in
// use: the bytes of live and not yet swept objects, and the unused bytes
// of the spans that hold them (the runtime's HeapInuse). Like Envoy's
// reserved less unmapped and free pages, this excludes heap memory the
// runtime holds free or has returned to the system.
var heapMetrics = [...]string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
}

// HeapInUse reads the Go heap in use (bytes) through runtime/metrics,
// which does not stop the world.
func HeapInUse() uint64 {
	var samples [len(heapMetrics)]metrics.Sample
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples[:])
	var total uint64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			total += s.Value.Uint64()
		}
	}
	return total
}

// fixedHeap is envoy.resource_monitors.fixed_heap: the heap in use as a
// share of the maximum (max_heap_size_bytes, or its runtime key's value).
type fixedHeap struct {
	max  func() uint64
	read func() uint64
}

// Update implements Monitor; it reports at once. A runtime maximum set to
// 0 after start is a failed update rather than an infinite pressure.
func (h fixedHeap) Update(report func(float64, error)) {
	limit := h.max()
	if limit == 0 {
		report(0, errors.New("fixed_heap: max heap size must be greater than 0"))
		return
	}
	report(float64(h.read())/float64(limit), nil)
}
