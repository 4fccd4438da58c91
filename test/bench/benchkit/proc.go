package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Pinned is a command run on cpu through taskset, or as is when cpu is ""
// or taskset is missing.
func Pinned(cpu, name string, args ...string) *exec.Cmd {
	if ts, err := exec.LookPath("taskset"); err == nil && cpu != "" {
		return exec.Command(ts, append([]string{"-c", cpu, name}, args...)...)
	}
	return exec.Command(name, args...)
}

// Tree is pid and its children, one level down (an nginx master and its
// workers; a single process alone).
func Tree(pid int) []int {
	out := []int{pid}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return out
	}
	for f := range strings.FieldsSeq(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// RSS is the resident memory of pid and its children (see Tree), in bytes.
func RSS(pid int) int64 { return Status(pid, "VmRSS") }

// Status is the sum of one memory field of /proc/PID/status ("VmRSS",
// "RssAnon", "RssFile", "VmHWM"...) over pid and its children (see Tree),
// in bytes.
func Status(pid int, field string) int64 {
	var sum int64
	for _, p := range Tree(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				sum += n << 10
			}
		}
	}
	return sum
}

// CPUTime is the CPU time (user and system) pid and its children (see
// Tree) have used.
func CPUTime(pid int) time.Duration {
	var ticks int64
	for _, p := range Tree(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// The fields after the command name, which may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// Stop ends a process the benchmark started: SIGINT (nginx's and haproxy's
// fast shutdown, the sidecar's drain), then SIGKILL after 5 seconds. It
// waits for the process, so cmd must not be waited for elsewhere.
func Stop(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
