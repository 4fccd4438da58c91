package options

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// affinityCPUCount is the number of CPUs in the process's affinity mask,
// which the kernel narrows to the cgroup cpuset.
func affinityCPUCount() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return set.Count(), nil
}
