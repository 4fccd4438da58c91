package admin

import (
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The profilers drive process-wide runtime state, so these tests run their
// steps in order and never in parallel.

// step is one request of a sequence, with its expected golden answer.
type step struct {
	target string
	golden string
}

func runSteps(t *testing.T, ta *testAdmin, steps []step) {
	t.Helper()
	for _, s := range steps {
		rec := serve(t, ta.Handler(), request{method: http.MethodPost, target: s.target})
		checkResponseGolden(t, s.golden, rec, ta.profilePath, "<profile_path>")
	}
}

func TestCPUProfiler(t *testing.T) {
	ta := newTestAdmin(t)
	runSteps(t, ta, []step{
		{"/cpuprofiler", "profiler-usage"},
		{"/cpuprofiler?enable=yes", "profiler-usage"},
		{"/cpuprofiler?enable=y&extra=1", "profiler-usage"},
		{"/cpuprofiler?enable=", "profiler-usage"},
		{"/cpuprofiler?enable=n", "profiler-ok"}, // stopping a stopped profiler is fine
		{"/cpuprofiler?enable=y", "profiler-ok"},
		{"/cpuprofiler?enable=y", "profiler-cpu-start-failed"}, // already running
		{"/cpuprofiler?enable=n", "profiler-ok"},
	})
	info, err := os.Stat(ta.profilePath)
	if err != nil || info.Size() == 0 {
		t.Errorf("CPU profile at %s: %v, size %d; want a non-empty file", ta.profilePath, err, sizeOf(info))
	}
}

func TestCPUProfilerUnwritablePath(t *testing.T) {
	ta := newTestAdmin(t, func(o *Options) { o.ProfilePath = filepath.Join(t.TempDir(), "missing", "proxy.prof") })
	runSteps(t, ta, []step{
		{"/cpuprofiler?enable=y", "profiler-cpu-start-failed"},
		{"/cpuprofiler?enable=n", "profiler-ok"},
	})
	if ta.profilers.cpuFile != nil {
		t.Errorf("profiler state kept a file after a failed start")
	}
}

func TestHeapProfiler(t *testing.T) {
	rate := runtime.MemProfileRate
	ta := newTestAdmin(t, func(o *Options) { o.ProfilePath = filepath.Join(t.TempDir(), "heap.prof") })
	runSteps(t, ta, []step{
		{"/heapprofiler", "profiler-usage"},
		{"/heapprofiler?enable=n", "profiler-heap-not-started"},
		{"/heapprofiler?enable=y", "profiler-heap-started"},
	})
	if runtime.MemProfileRate != 1 {
		t.Errorf("MemProfileRate = %d while profiling, want 1", runtime.MemProfileRate)
	}
	runSteps(t, ta, []step{
		{"/heapprofiler?enable=y", "profiler-heap-already-started"},
		{"/heapprofiler?enable=n", "profiler-heap-stopped"},
	})
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate = %d after profiling, want %d restored", runtime.MemProfileRate, rate)
	}
	info, err := os.Stat(ta.profilePath)
	if err != nil || info.Size() == 0 {
		t.Errorf("heap profile at %s: %v, size %d; want a non-empty file", ta.profilePath, err, sizeOf(info))
	}
}

func TestHeapProfilerUnwritablePath(t *testing.T) {
	rate := runtime.MemProfileRate
	ta := newTestAdmin(t, func(o *Options) { o.ProfilePath = filepath.Join(t.TempDir(), "missing", "proxy.prof") })
	runSteps(t, ta, []step{
		{"/heapprofiler?enable=y", "profiler-heap-start-failed"},
		{"/heapprofiler?enable=n", "profiler-heap-not-started"},
	})
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate = %d after a failed start, want %d", runtime.MemProfileRate, rate)
	}
}

func sizeOf(info os.FileInfo) int64 {
	if info == nil {
		return -1
	}
	return info.Size()
}

// TestCloseStopsProfilers checks that Close leaves complete profiles behind
// and the runtime as it found it.
func TestCloseStopsProfilers(t *testing.T) {
	rate := runtime.MemProfileRate
	dir := t.TempDir()
	cpu := newTestAdmin(t, func(o *Options) { o.ProfilePath = filepath.Join(dir, "cpu.prof") })
	heap := newTestAdmin(t, func(o *Options) { o.ProfilePath = filepath.Join(dir, "heap.prof") })
	runSteps(t, cpu, []step{{"/cpuprofiler?enable=y", "profiler-ok"}})
	runSteps(t, heap, []step{{"/heapprofiler?enable=y", "profiler-heap-started"}})

	for name, a := range map[string]*testAdmin{"cpu": cpu, "heap": heap} {
		if err := a.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
		info, err := os.Stat(a.profilePath)
		if err != nil || info.Size() == 0 {
			t.Errorf("%s profile: %v, size %d; want a non-empty file", name, err, sizeOf(info))
		}
		if err := a.Close(); err != nil {
			t.Errorf("%s: second Close: %v", name, err)
		}
	}
	if runtime.MemProfileRate != rate {
		t.Errorf("MemProfileRate = %d after Close, want %d", runtime.MemProfileRate, rate)
	}
	if err := newTestAdmin(t).Close(); err != nil {
		t.Errorf("Close without profilers: %v", err)
	}
}
