package overload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
)

// cpuDampening is the weight of a new reading in Envoy's exponentially
// weighted moving average of the CPU utilization: small, so that a short
// spike or drop moves the pressure little.
const cpuDampening = 0.05

// The files the CPU utilization monitor reads: the host's /proc/stat
// (HOST mode), and in CONTAINER mode cgroup v2's when all three exist,
// else v1's cpu and cpuacct controllers.
const (
	procStat            = "/proc/stat"
	cgroupV2CPUStat     = cgroupV2Base + "/cpu.stat"
	cgroupV2CPUMax      = cgroupV2Base + "/cpu.max"
	cgroupV2CPUEffCPUs  = cgroupV2Base + "/cpuset.cpus.effective"
	cgroupV1CPUShares   = "/sys/fs/cgroup/cpu/cpu.shares"
	cgroupV1CPUAcctUsed = "/sys/fs/cgroup/cpuacct/cpuacct.usage"
)

// millicoresPerCore converts cgroup v1 cpu.shares (1024 a core, read as
// millicores the way Envoy reads them) into the usage's scale.
const millicoresPerCore = 1000

// cpuSample is one reading of a CPU counter: work done and the total it
// is a share of, in the reader's units.
type cpuSample struct {
	work  float64
	total int64
	// cores is the number of cores the work is spread over (cgroup v2);
	// unused elsewhere.
	cores float64
}

// cpuReader reads one sample, and turns two samples into the utilization
// over the time between them.
type cpuReader interface {
	sample() (cpuSample, error)
	utilization(prev, cur cpuSample) float64
}

// cpuUtilization is envoy.resource_monitors.cpu_utilization: the CPU in
// use over each refresh interval, as a share of the host's CPUs (HOST) or
// of the container's allowance (CONTAINER), smoothed with Envoy's moving
// average.
type cpuUtilization struct {
	reader cpuReader
	// mu guards the state between updates (the manager never runs two
	// updates of a monitor at once, but a test may).
	mu       sync.Mutex
	prev     cpuSample
	havePrev bool
	smoothed float64
}

// newCPUUtilization builds the monitor and takes its first sample, the
// baseline of the first interval, as Envoy's constructor does. A baseline
// that cannot be read is taken at the first update instead.
func newCPUUtilization(r cpuReader) *cpuUtilization {
	m := &cpuUtilization{reader: r}
	if s, err := r.sample(); err == nil {
		m.prev, m.havePrev = s, true
	}
	return m
}

// Update implements Monitor; it reports at once.
func (m *cpuUtilization) Update(report func(float64, error)) {
	m.mu.Lock()
	cur, err := m.reader.sample()
	if err != nil {
		m.mu.Unlock()
		report(0, err)
		return
	}
	var u float64
	if m.havePrev {
		dw, dt := cur.work-m.prev.work, cur.total-m.prev.total
		if dw < 0 || dt <= 0 {
			m.mu.Unlock()
			report(0, fmt.Errorf("erroneous CPU stats calculation: work over the period (%v) cannot be negative and total over the period (%d) must be positive", dw, dt))
			return
		}
		u = m.reader.utilization(m.prev, cur)
	}
	// The first reading (no baseline) counts as 0, as Envoy's does.
	m.prev, m.havePrev = cur, true
	m.smoothed = u*cpuDampening + (1-cpuDampening)*m.smoothed
	p := m.smoothed
	m.mu.Unlock()
	report(p, nil)
}

// hostCPU reads the host's CPU times from the first line of /proc/stat:
// work is user + nice + system, total adds idle (clock ticks).
type hostCPU struct {
	files hostFiles
}

func (h hostCPU) sample() (cpuSample, error) {
	text, err := h.files.read(procStat)
	if err != nil {
		return cpuSample{}, err
	}
	rest, ok := strings.CutPrefix(text, "cpu  ")
	if !ok {
		return cpuSample{}, fmt.Errorf("unexpected format in linux cpu stats file %s", procStat)
	}
	line, _, _ := strings.Cut(rest, "\n")
	fields := strings.Fields(line)
	if len(fields) < 4 {
		return cpuSample{}, fmt.Errorf("unexpected format in linux cpu stats file %s", procStat)
	}
	var t [4]uint64
	for i := range t {
		if t[i], err = strconv.ParseUint(fields[i], 10, 63); err != nil {
			return cpuSample{}, fmt.Errorf("unexpected format in linux cpu stats file %s", procStat)
		}
	}
	work := t[0] + t[1] + t[2]
	total := work + t[3]
	if total < work || int64(total) < 0 {
		return cpuSample{}, fmt.Errorf("cpu times out of range in %s", procStat)
	}
	return cpuSample{work: float64(work), total: int64(total)}, nil
}

func (hostCPU) utilization(prev, cur cpuSample) float64 {
	return (cur.work - prev.work) / float64(cur.total-prev.total)
}

// cgroupV1CPU reads a cgroup v1 container's CPU usage (cpuacct.usage,
// nanoseconds) scaled by its cpu.shares, against the clock (nanoseconds).
type cgroupV1CPU struct {
	files hostFiles
	clock cgroupClock
}

func (c cgroupV1CPU) sample() (cpuSample, error) {
	shares, err := c.readFloat(cgroupV1CPUShares)
	if err != nil {
		return cpuSample{}, err
	}
	usage, err := c.readFloat(cgroupV1CPUAcctUsed)
	if err != nil {
		return cpuSample{}, err
	}
	if !(shares > 0) {
		return cpuSample{}, fmt.Errorf("invalid CPU shares value %v in %s", shares, cgroupV1CPUShares)
	}
	return cpuSample{work: usage * millicoresPerCore / shares, total: c.clock.nanos()}, nil
}

func (c cgroupV1CPU) readFloat(name string) (float64, error) {
	text, err := c.files.read(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil {
		return 0, fmt.Errorf("failed to parse the value of %s: %q", name, strings.TrimSpace(text))
	}
	return v, nil
}

func (cgroupV1CPU) utilization(prev, cur cpuSample) float64 {
	return (cur.work - prev.work) / float64(cur.total-prev.total)
}

// cgroupV2CPU reads a cgroup v2 container's CPU usage (cpu.stat's
// usage_usec) against the clock, over the cores it may use: its effective
// cpuset, or fewer under a cpu.max quota.
type cgroupV2CPU struct {
	files hostFiles
	clock cgroupClock
}

func (c cgroupV2CPU) sample() (cpuSample, error) {
	stat, err := c.files.read(cgroupV2CPUStat)
	if err != nil {
		return cpuSample{}, err
	}
	var usage uint64
	found := false
	for line := range strings.Lines(stat) {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			if usage, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64); err != nil {
				return cpuSample{}, fmt.Errorf("failed to parse usage_usec in %s", cgroupV2CPUStat)
			}
			found = true
			break
		}
	}
	if !found {
		return cpuSample{}, fmt.Errorf("missing usage_usec in %s", cgroupV2CPUStat)
	}
	eff, err := c.files.read(cgroupV2CPUEffCPUs)
	if err != nil {
		return cpuSample{}, err
	}
	n, err := options.CountCPUList(eff)
	if err != nil {
		return cpuSample{}, fmt.Errorf("failed to parse %s: %w", cgroupV2CPUEffCPUs, err)
	}
	max, err := c.files.read(cgroupV2CPUMax)
	if err != nil {
		return cpuSample{}, err
	}
	cores, err := effectiveCores(max, n)
	if err != nil {
		return cpuSample{}, fmt.Errorf("failed to parse %s: %w", cgroupV2CPUMax, err)
	}
	return cpuSample{work: float64(usage), total: c.clock.nanos(), cores: cores}, nil
}

// effectiveCores reads cpu.max ("quota period", or "max period" without a
// quota): the cores a quota allows, at most the cpuset's n.
func effectiveCores(cpuMax string, n int) (float64, error) {
	f := strings.Fields(cpuMax)
	if len(f) != 2 {
		return 0, errors.New("unexpected cpu.max format")
	}
	if f[0] == "max" {
		return float64(n), nil
	}
	quota, err1 := strconv.ParseInt(f[0], 10, 64)
	period, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("failed to parse cpu.max values")
	}
	if period <= 0 || quota <= 0 {
		return 0, fmt.Errorf("invalid cpu.max quota %d or period %d", quota, period)
	}
	return min(float64(n), float64(quota)/float64(period)), nil
}

// utilization is the usage (microseconds) over the elapsed time
// (nanoseconds) times the cores, bounded to [0, 1] as Envoy bounds it.
func (cgroupV2CPU) utilization(prev, cur cpuSample) float64 {
	work := (cur.work - prev.work) / 1e6
	elapsed := float64(cur.total-prev.total) / 1e9
	return min(max(work/(elapsed*cur.cores), 0), 1)
}

// cgroupClock is the time base of the container readers: nanoseconds
// since the monitor was built, through time.Time's monotonic reading (a
// wall clock step does not count as CPU time elapsed).
type cgroupClock struct {
	now    func() time.Time
	origin time.Time
}

func newCgroupClock(now func() time.Time) cgroupClock {
	return cgroupClock{now: now, origin: now()}
}

// nanos is the time since the origin.
func (c cgroupClock) nanos() int64 { return int64(c.now().Sub(c.origin)) }
