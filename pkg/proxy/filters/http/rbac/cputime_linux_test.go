package rbac

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used: benchmarks
// report it beside the wall time, which a loaded machine inflates.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
