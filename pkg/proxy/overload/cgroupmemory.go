package overload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The cgroup memory files Envoy's cgroup_memory monitor reads: cgroup v2's
// when both exist, else v1's when its memory controller is mounted.
const (
	cgroupV2Base        = "/sys/fs/cgroup"
	cgroupV2MemoryUsage = cgroupV2Base + "/memory.current"
	cgroupV2MemoryLimit = cgroupV2Base + "/memory.max"
	cgroupV1MemoryBase  = "/sys/fs/cgroup/memory"
	cgroupV1MemoryUsage = cgroupV1MemoryBase + "/memory.usage_in_bytes"
	cgroupV1MemoryLimit = cgroupV1MemoryBase + "/memory.limit_in_bytes"
)

// unlimitedMemory is the limit of a cgroup without one: v2 writes "max",
// v1 -1 (or its unsigned form).
const unlimitedMemory = math.MaxUint64

// cgroupMemory is envoy.resource_monitors.cgroup_memory: the cgroup's
// memory in use as a share of its limit, or of max_memory_bytes when that
// is set and lower.
type cgroupMemory struct {
	files        hostFiles
	usage, limit string // the files read
	max          uint64 // max_memory_bytes; 0 means the cgroup's limit alone
}

// newCgroupMemory picks the cgroup version as Envoy does, once: v2 when
// memory.current and memory.max exist, else v1 when its memory controller
// is mounted, else an error.
func newCgroupMemory(files hostFiles, max uint64) (*cgroupMemory, error) {
	m := &cgroupMemory{files: files, max: max}
	switch {
	case files.exists(cgroupV2MemoryUsage) && files.exists(cgroupV2MemoryLimit):
		m.usage, m.limit = cgroupV2MemoryUsage, cgroupV2MemoryLimit
	case files.exists(cgroupV1MemoryBase):
		m.usage, m.limit = cgroupV1MemoryUsage, cgroupV1MemoryLimit
	default:
		return nil, fmt.Errorf("no supported cgroup memory implementation found (neither %s nor %s)", cgroupV2MemoryUsage, cgroupV1MemoryBase)
	}
	return m, nil
}

// Update implements Monitor; it reports at once. An unreadable or
// malformed file is a failed update.
func (m *cgroupMemory) Update(report func(float64, error)) {
	usage, err := m.readValue(m.usage)
	if err != nil {
		report(0, err)
		return
	}
	limit, err := m.readValue(m.limit)
	if err != nil {
		report(0, err)
		return
	}
	if m.max > 0 {
		limit = min(limit, m.max)
	}
	if limit == unlimitedMemory {
		// No limit: no pressure.
		report(0, nil)
		return
	}
	report(float64(usage)/float64(limit), nil)
}

// readValue reads a one-value memory file: a byte count, "max" (v2) or
// -1 (v1) for no limit.
func (m *cgroupMemory) readValue(name string) (uint64, error) {
	text, err := m.files.read(name)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(text)
	switch s {
	case "":
		return 0, fmt.Errorf("empty memory stats file at %s", name)
	case "max", "-1":
		return unlimitedMemory, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unable to parse memory stats from file at %s: %q", name, s)
	}
	return v, nil
}
