package overload

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Type URLs and stat names of the cgroup and CPU monitors.
const (
	cgroupMemoryURL = "type.googleapis.com/envoy.extensions.resource_monitors.cgroup_memory.v3.CgroupMemoryConfig"
	cpuURL          = "type.googleapis.com/envoy.extensions.resource_monitors.cpu_utilization.v3.CpuUtilizationConfig"
	cgroupPressure  = "overload.envoy.resource_monitors.cgroup_memory.pressure"
	cgroupFailed    = "overload.envoy.resource_monitors.cgroup_memory.failed_updates"
)

// writeHost writes files (path below "/" -> content) below root; a
// content of "/" makes a directory.
func writeHost(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if content == "/" {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// update runs one update of m and returns what it reported.
func update(t *testing.T, m Monitor) (float64, error) {
	t.Helper()
	var p float64
	var err error
	calls := 0
	m.Update(func(v float64, e error) { p, err = v, e; calls++ })
	if calls != 1 {
		t.Fatalf("Update reported %d times, want once", calls)
	}
	return p, err
}

// hostManager builds a manager from YAML with the host files below root.
func hostManager(t *testing.T, root, text string, clock Clock) (*Manager, *stats.Store, error) {
	t.Helper()
	store := stats.NewStore()
	m, err := New(parseConfig(t, text), Deps{Stats: store, Log: logr.Discard(), Clock: clock, HostRoot: root})
	if err == nil {
		t.Cleanup(m.Stop)
	}
	return m, store, err
}

// TestCgroupMemory: the pressure is memory.current over memory.max, or
// over max_memory_bytes when that is lower; no limit is no pressure; bad
// files are failed updates.
func TestCgroupMemory(t *testing.T) {
	v2 := func(current, limit string) map[string]string {
		return map[string]string{cgroupV2MemoryUsage: current, cgroupV2MemoryLimit: limit}
	}
	v1 := func(usage, limit string) map[string]string {
		return map[string]string{cgroupV1MemoryUsage: usage, cgroupV1MemoryLimit: limit}
	}
	tests := map[string]struct {
		files   map[string]string
		max     uint64
		want    float64
		wantErr string
	}{
		"v2":                          {files: v2("250\n", "1000\n"), want: 0.25},
		"v2 over the limit":           {files: v2("1500\n", "1000\n"), want: 1.5},
		"v2 unlimited":                {files: v2("250\n", "max\n"), want: 0},
		"v2 unlimited with max bytes": {files: v2("250\n", "max\n"), max: 500, want: 0.5},
		"max bytes below the limit":   {files: v2("250\n", "1000\n"), max: 500, want: 0.5},
		"max bytes above the limit":   {files: v2("250\n", "1000\n"), max: 5000, want: 0.25},
		"v1":                          {files: v1("300\n", "600\n"), want: 0.5},
		"v1 unlimited":                {files: v1("300\n", "-1\n"), want: 0},
		"v1 unlimited, unsigned":      {files: v1("300\n", "18446744073709551615\n"), want: 0},
		"v2 empty usage":              {files: v2("\n", "1000\n"), wantErr: "empty memory stats file at /sys/fs/cgroup/memory.current"},
		"v2 garbage limit":            {files: v2("250\n", "lots\n"), wantErr: `unable to parse memory stats from file at /sys/fs/cgroup/memory.max: "lots"`},
		"v1 limit file missing":       {files: map[string]string{cgroupV1MemoryUsage: "1"}, wantErr: "unable to read /sys/fs/cgroup/memory/memory.limit_in_bytes"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeHost(t, root, tc.files)
			m, err := newCgroupMemory(hostFiles{root: root}, tc.max)
			if err != nil {
				t.Fatalf("newCgroupMemory: %v", err)
			}
			p, err := update(t, m)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Update = %v, %v; want an error containing %q", p, err, tc.wantErr)
				}
				return
			}
			if err != nil || !near(p, tc.want) {
				t.Fatalf("Update = %v, %v; want %v", p, err, tc.want)
			}
		})
	}
}

// TestCgroupMemoryVersion: v2 is read when memory.current and memory.max
// both exist, else v1 when its controller is mounted; neither is a
// configuration error naming the monitor.
func TestCgroupMemoryVersion(t *testing.T) {
	config := `resource_monitors: [{name: envoy.resource_monitors.cgroup_memory, typed_config: {"@type": ` + cgroupMemoryURL + `}}]`
	t.Run("both", func(t *testing.T) {
		root := t.TempDir()
		writeHost(t, root, map[string]string{
			cgroupV2MemoryUsage: "1", cgroupV2MemoryLimit: "4",
			cgroupV1MemoryUsage: "1", cgroupV1MemoryLimit: "2",
		})
		m, err := newCgroupMemory(hostFiles{root: root}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := update(t, m); err != nil || p != 0.25 {
			t.Fatalf("Update = %v, %v; want 0.25 from v2's files", p, err)
		}
	})
	t.Run("v2 without memory.max", func(t *testing.T) {
		root := t.TempDir()
		writeHost(t, root, map[string]string{cgroupV2MemoryUsage: "1", cgroupV1MemoryUsage: "1", cgroupV1MemoryLimit: "2"})
		m, err := newCgroupMemory(hostFiles{root: root}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := update(t, m); err != nil || p != 0.5 {
			t.Fatalf("Update = %v, %v; want 0.5 from v1's files", p, err)
		}
	})
	t.Run("neither", func(t *testing.T) {
		_, _, err := hostManager(t, t.TempDir(), config, newFakeClock())
		want := "resource_monitors[0].typed_config: no supported cgroup memory implementation found"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New = %v; want %q", err, want)
		}
	})
}

// TestCgroupMemoryDrivesActions: through the manager, the pressure gauge
// follows memory.current and an action fires past its threshold; a file
// gone is a failed update.
func TestCgroupMemoryDrivesActions(t *testing.T) {
	root := t.TempDir()
	writeHost(t, root, map[string]string{cgroupV2MemoryUsage: "100", cgroupV2MemoryLimit: "1000"})
	config := `resource_monitors: [{name: envoy.resource_monitors.cgroup_memory, typed_config: {"@type": ` + cgroupMemoryURL + `, max_memory_bytes: 2000}}]
actions: [{name: envoy.overload_actions.stop_accepting_connections, triggers: [{name: envoy.resource_monitors.cgroup_memory, threshold: {value: 0.9}}]}]`
	m, store, err := hostManager(t, root, config, newFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	m.refresh()
	if got := gauge(store, cgroupPressure); got != 10 {
		t.Fatalf("pressure = %d, want 10", got)
	}
	if paused, _ := m.AcceptState(); paused {
		t.Fatal("paused at 10%")
	}
	writeHost(t, root, map[string]string{cgroupV2MemoryUsage: "950"})
	m.refresh()
	if got, act := gauge(store, cgroupPressure), gauge(store, stopConnsAct); got != 95 || act != 1 {
		t.Fatalf("pressure, active = %d, %d; want 95, 1", got, act)
	}
	if err := os.Remove(filepath.Join(root, cgroupV2MemoryUsage)); err != nil {
		t.Fatal(err)
	}
	m.refresh()
	if got := counter(store, cgroupFailed); got != 1 {
		t.Fatalf("failed_updates = %d, want 1", got)
	}
}

// procStatText is a /proc/stat with the given user, nice, system and idle
// ticks on its "cpu" line.
func procStatText(user, nice, system, idle uint64) string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return "cpu  " + strings.Join([]string{u(user), u(nice), u(system), u(idle), "7", "0", "3", "0", "0", "0"}, " ") +
		"\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n"
}

// TestCPUUtilizationHost: HOST mode reads /proc/stat's work (user + nice +
// system) over its total (with idle) between refreshes, smoothed with
// Envoy's moving average (weight 0.05); bad or backwards readings are
// failed updates that keep the baseline.
func TestCPUUtilizationHost(t *testing.T) {
	root := t.TempDir()
	writeHost(t, root, map[string]string{procStat: procStatText(60, 10, 30, 900)})
	m := newCPUUtilization(hostCPU{files: hostFiles{root: root}})
	smoothed := 0.0
	steps := []struct {
		stat    string
		util    float64 // the interval's utilization; -1 for a failed update
		comment string
	}{
		{procStatText(110, 10, 30, 950), 0.5, "50 of 100 ticks busy"},
		{procStatText(110, 10, 30, 1050), 0, "idle"},
		{procStatText(210, 10, 30, 1050), 1, "all busy"},
		{procStatText(210, 10, 30, 1050), -1, "no tick elapsed"},
		{procStatText(10, 10, 30, 2000), -1, "work went backwards"},
		{"cpu0 1 2 3 4\n", -1, "no cpu line"},
		{"cpu  1 2 x 4\n", -1, "not a number"},
		{procStatText(235, 10, 30, 1125), 0.25, "from the last good reading"},
	}
	for i, s := range steps {
		writeHost(t, root, map[string]string{procStat: s.stat})
		p, err := update(t, m)
		if s.util < 0 {
			if err == nil {
				t.Fatalf("step %d (%s): Update = %v, want an error", i, s.comment, p)
			}
			continue
		}
		smoothed = s.util*0.05 + 0.95*smoothed
		if err != nil || !near(p, smoothed) {
			t.Fatalf("step %d (%s): Update = %v, %v; want %v", i, s.comment, p, err, smoothed)
		}
	}
}

// TestCPUUtilizationFirstReading: without a baseline (the file could not
// be read when the monitor was built), the first reading counts as 0.
func TestCPUUtilizationFirstReading(t *testing.T) {
	root := t.TempDir()
	m := newCPUUtilization(hostCPU{files: hostFiles{root: root}})
	if _, err := update(t, m); err == nil {
		t.Fatal("Update without /proc/stat: want an error")
	}
	writeHost(t, root, map[string]string{procStat: procStatText(100, 0, 0, 0)})
	if p, err := update(t, m); err != nil || p != 0 {
		t.Fatalf("first reading = %v, %v; want 0", p, err)
	}
	writeHost(t, root, map[string]string{procStat: procStatText(200, 0, 0, 0)})
	if p, err := update(t, m); err != nil || !near(p, 0.05) {
		t.Fatalf("second reading = %v, %v; want 0.05", p, err)
	}
}

// TestCPUUtilizationContainer: CONTAINER mode reads cgroup v2's
// usage_usec over the elapsed time and the cores of cpu.max and the
// cpuset (bounded to 1), or v1's cpuacct.usage scaled by cpu.shares; with
// neither it is a configuration error.
func TestCPUUtilizationContainer(t *testing.T) {
	config := `resource_monitors: [{name: envoy.resource_monitors.cpu_utilization, typed_config: {"@type": ` + cpuURL + `, mode: CONTAINER}}]`
	v2 := func(usage, cpuMax, cpus string) map[string]string {
		return map[string]string{
			cgroupV2CPUStat:    "usage_usec " + usage + "\nuser_usec 1\nsystem_usec 2\n",
			cgroupV2CPUMax:     cpuMax,
			cgroupV2CPUEffCPUs: cpus,
		}
	}
	tests := map[string]struct {
		before, after map[string]string
		util          float64 // -1: a failed update
	}{
		"v2 half a core of a quota of one": {v2("1000", "100000 100000\n", "0-3\n"), v2("501000", "100000 100000\n", "0-3\n"), 0.5},
		"v2 quota of half a core":          {v2("1000", "50000 100000\n", "0-3\n"), v2("251000", "50000 100000\n", "0-3\n"), 0.5},
		"v2 no quota, four cpus":           {v2("0", "max 100000\n", "0-1,4,6\n"), v2("1000000", "max 100000\n", "0-1,4,6\n"), 0.25},
		"v2 quota above the cpus":          {v2("0", "800000 100000\n", "0\n"), v2("500000", "800000 100000\n", "0\n"), 0.5},
		"v2 bounded to 1":                  {v2("0", "50000 100000\n", "0\n"), v2("2000000", "50000 100000\n", "0\n"), 1},
		"v2 no usage_usec":                 {v2("0", "max 100000\n", "0\n"), map[string]string{cgroupV2CPUStat: "user_usec 1\n"}, -1},
		"v2 bad cpu.max":                   {v2("0", "max 100000\n", "0\n"), v2("10", "max\n", "0\n"), -1},
		"v2 bad cpuset":                    {v2("0", "max 100000\n", "0\n"), v2("10", "max 100000\n", "3-1\n"), -1},
		"v1": {
			map[string]string{cgroupV1CPUShares: "512\n", cgroupV1CPUAcctUsed: "1000\n"},
			map[string]string{cgroupV1CPUShares: "512\n", cgroupV1CPUAcctUsed: "256001000\n"},
			0.5, // 0.256 s of CPU * 1000 / 512 over 1 s
		},
		"v1 zero shares": {
			map[string]string{cgroupV1CPUShares: "512\n", cgroupV1CPUAcctUsed: "1000\n"},
			map[string]string{cgroupV1CPUShares: "0\n", cgroupV1CPUAcctUsed: "2000\n"},
			-1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeHost(t, root, tc.before)
			clock := newFakeClock()
			m, store, err := hostManager(t, root, config, clock)
			if err != nil {
				t.Fatal(err)
			}
			clock.advance(time.Second)
			writeHost(t, root, tc.after)
			m.refresh()
			failed := counter(store, "overload.envoy.resource_monitors.cpu_utilization.failed_updates")
			if tc.util < 0 {
				if failed != 1 {
					t.Fatalf("failed_updates = %d, want 1", failed)
				}
				return
			}
			want := percent(tc.util * 0.05)
			if got := gauge(store, "overload.envoy.resource_monitors.cpu_utilization.pressure"); failed != 0 || got != want {
				t.Fatalf("pressure = %d (failed_updates %d), want %d", got, failed, want)
			}
		})
	}
	t.Run("neither", func(t *testing.T) {
		root := t.TempDir()
		writeHost(t, root, map[string]string{cgroupV2CPUStat: "usage_usec 1\n", cgroupV1CPUShares: "1024"})
		_, _, err := hostManager(t, root, config, newFakeClock())
		want := "resource_monitors[0].typed_config.mode: no supported cgroup CPU implementation found"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("New = %v; want %q", err, want)
		}
	})
}

// TestEffectiveCores: cpu.max's quota over its period, at most the cpuset.
func TestEffectiveCores(t *testing.T) {
	for in, want := range map[string]float64{"max 100000": 4, "200000 100000\n": 2, "900000 100000": 4, "25000 100000": 0.25} {
		if got, err := effectiveCores(in, 4); err != nil || got != want {
			t.Errorf("effectiveCores(%q, 4) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "max", "1 2 3", "x 100000", "100 0", "-1 100000"} {
		if got, err := effectiveCores(in, 4); err == nil {
			t.Errorf("effectiveCores(%q, 4) = %v; want an error", in, got)
		}
	}
}
