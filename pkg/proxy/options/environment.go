package options

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// onlineCPUsPath lists the online CPUs as ranges ("0-3,6").
const onlineCPUsPath = "/sys/devices/system/cpu/online"

// maxCPUs bounds what a CPU list may describe. Linux's NR_CPUS tops out at
// 8192; anything far beyond is a corrupt file, not a machine.
const maxCPUs = 1 << 16

// Environment is what Parse needs to know about the machine. It is a value
// so that tests (and the fuzzer) can pass a fixed one.
type Environment struct {
	// HardwareThreads is the number of online CPUs: the default
	// --concurrency. Values below 1 count as 1.
	HardwareThreads int
	// CPUSetSize returns the number of CPUs the process may run on (its
	// cpuset or affinity mask), used with --cpuset-threads. Nil, an error
	// or a value below 1 falls back to HardwareThreads.
	CPUSetSize func() (int, error)
}

// DefaultEnvironment describes the running machine: HardwareThreads from
// /sys/devices/system/cpu/online (runtime.NumCPU when unreadable) and
// CPUSetSize from the process's affinity mask.
func DefaultEnvironment() Environment {
	n, err := readOnlineCPUs(onlineCPUsPath)
	if err != nil {
		n = runtime.NumCPU()
	}
	return Environment{HardwareThreads: n, CPUSetSize: affinityCPUCount}
}

// readOnlineCPUs counts the CPUs listed in a sysfs CPU-list file.
func readOnlineCPUs(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read online cpus: %w", err)
	}
	n, err := CountCPUList(string(data))
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

// CountCPUList counts the CPUs in a Linux CPU list such as "0-3,6,8-9\n"
// (sysfs online CPUs, a cgroup's cpuset.cpus.effective).
func CountCPUList(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty cpu list")
	}
	total := 0
	for item := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := parseCPUNumber(lo)
		if err != nil {
			return 0, err
		}
		last := first
		if isRange {
			if last, err = parseCPUNumber(hi); err != nil {
				return 0, err
			}
			if last < first {
				return 0, fmt.Errorf("cpu range %q is reversed", item)
			}
		}
		total += last - first + 1
		if total > maxCPUs {
			return 0, fmt.Errorf("more than %d cpus listed", maxCPUs)
		}
	}
	return total, nil
}

// parseCPUNumber parses one CPU index; it is below maxCPUs so that counts
// cannot overflow.
func parseCPUNumber(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n >= maxCPUs {
		return 0, fmt.Errorf("bad cpu number %q", s)
	}
	return int(n), nil
}

// concurrency works out the effective worker count (see Options.Concurrency)
// and any warning to log about it.
func (env Environment) concurrency(given bool, value uint64, cpuset bool) (uint32, []string) {
	hardware := clampWorkers(env.HardwareThreads)
	switch {
	case given && cpuset:
		return clampWorkerCount(value),
			[]string{"Both --concurrency and --cpuset-threads options are set; not applying --cpuset-threads."}
	case given:
		return clampWorkerCount(value), nil
	case !cpuset:
		return hardware, nil
	case env.CPUSetSize == nil:
		return hardware, []string{fmt.Sprintf("the cpuset size is unknown; using %d hardware threads as the worker count", hardware)}
	}
	n, err := env.CPUSetSize()
	switch {
	case err != nil:
		return hardware, []string{fmt.Sprintf("cannot read the cpuset size, using %d hardware threads as the worker count: %v", hardware, err)}
	case n < 1:
		return hardware, []string{fmt.Sprintf("the cpuset size is %d; using %d hardware threads as the worker count", n, hardware)}
	}
	return clampWorkers(n), nil
}

// clampWorkers and clampWorkerCount keep a worker count between 1 and
// MaxUint32: there is always at least one worker thread.
func clampWorkers(n int) uint32 {
	if n < 1 {
		return 1
	}
	return clampWorkerCount(uint64(n))
}

func clampWorkerCount(n uint64) uint32 {
	return uint32(max(1, min(n, math.MaxUint32)))
}
