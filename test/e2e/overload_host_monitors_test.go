package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The overload manager's cgroup_memory and cpu_utilization monitors, fed
// a fake cgroup and /proc/stat that the spec writes below a directory the
// sidecar takes as "/" (OUTRIGGER_HOST_ROOT).

// Type URLs of the host monitors.
const (
	cgroupMemoryURL = "type.googleapis.com/envoy.extensions.resource_monitors.cgroup_memory.v3.CgroupMemoryConfig"
	cpuMonitorURL   = "type.googleapis.com/envoy.extensions.resource_monitors.cpu_utilization.v3.CpuUtilizationConfig"
)

// hostRoot is a fake "/" for the sidecar's resource monitors.
type hostRoot string

// write writes (or rewrites) one file below the root.
func (r hostRoot) write(name, content string) {
	GinkgoHelper()
	p := filepath.Join(string(r), name)
	Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
	// Written beside and renamed, so the sidecar never reads half a file.
	tmp := p + ".tmp"
	Expect(os.WriteFile(tmp, []byte(content), 0o644)).To(Succeed())
	Expect(os.Rename(tmp, p)).To(Succeed())
}

// env is the sidecar's environment entry naming the root.
func (r hostRoot) env() []string { return []string{"OUTRIGGER_HOST_ROOT=" + string(r)} }

// cgroupOverload is an overload_manager with the cgroup_memory monitor
// (more fields in flow style) and stop_accepting_requests at 0.9.
func cgroupOverload(fields string) string {
	return fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.cgroup_memory, typed_config: {"@type": %s%s}}], `+
		`actions: [{name: envoy.overload_actions.stop_accepting_requests, triggers: [{name: envoy.resource_monitors.cgroup_memory, threshold: {value: 0.9}}]}]}`,
		cgroupMemoryURL, fields)
}

// getStatus sends GET / to addr and returns the status code.
func getStatus(addr string) int {
	GinkgoHelper()
	resp, err := http.Get("http://" + addr + "/")
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

var _ = Describe("Overload manager host resource monitors", func() {
	It("sheds requests while the cgroup's memory.current is past the threshold of memory.max, and serves again below it", func() {
		root := hostRoot(newDir())
		root.write("sys/fs/cgroup/memory.current", "100000\n")
		root.write("sys/fs/cgroup/memory.max", "1000000\n")
		s := StartEnv(newDir(), overloadConfig(cgroupOverload(""), ""), root.env())
		waitStat(s, "overload.envoy.resource_monitors.cgroup_memory.pressure", "10")
		Expect(statValue(s, "overload.envoy.overload_actions.stop_accepting_requests.active")).To(Equal("0"))
		addr := listenerAddr(s, "web")
		Expect(getStatus(addr)).To(Equal(200))

		root.write("sys/fs/cgroup/memory.current", "950000\n")
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_requests.active", "1")
		Expect(statValue(s, "overload.envoy.resource_monitors.cgroup_memory.pressure")).To(Equal("95"))
		Expect(getStatus(addr)).To(Equal(503))
		Expect(s.Get("/ready").Status).To(Equal(200), "the admin is never shed")

		root.write("sys/fs/cgroup/memory.current", "200000\n")
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_requests.active", "0")
		Expect(getStatus(addr)).To(Equal(200))
		Expect(statValue(s, "overload.envoy.resource_monitors.cgroup_memory.failed_updates")).To(Equal("0"))
	})

	It("takes max_memory_bytes when it is below the cgroup's limit, and falls back to cgroup v1's files", func() {
		root := hostRoot(newDir())
		root.write("sys/fs/cgroup/memory/memory.usage_in_bytes", "500\n")
		root.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
		s := StartEnv(newDir(), overloadConfig(cgroupOverload(", max_memory_bytes: 520"), ""), root.env())
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_requests.active", "1")
		Expect(statValue(s, "overload.envoy.resource_monitors.cgroup_memory.pressure")).To(Equal("96"))
		Expect(getStatus(listenerAddr(s, "web"))).To(Equal(503))
	})

	It("counts unreadable cgroup files as failed updates", func() {
		root := hostRoot(newDir())
		root.write("sys/fs/cgroup/memory.current", "not a number\n")
		root.write("sys/fs/cgroup/memory.max", "max\n")
		s := StartEnv(newDir(), overloadConfig(cgroupOverload(""), ""), root.env())
		Eventually(func() int { return intStat(s, "overload.envoy.resource_monitors.cgroup_memory.failed_updates") }).Should(BeNumerically(">=", 2))
		Expect(statValue(s, "overload.envoy.overload_actions.stop_accepting_requests.active")).To(Equal("0"))
	})

	It("refuses a cgroup_memory monitor where no cgroup memory controller is found", func() {
		dir := newDir()
		cfg := filepath.Join(dir, "bootstrap.yaml")
		Expect(os.WriteFile(cfg, []byte(overloadConfig(cgroupOverload(""), "")), 0o600)).To(Succeed())
		r := runEnv(hostRoot(newDir()).env(), "--mode", "validate", "-c", cfg)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("overload_manager.resource_monitors[0].typed_config: no supported cgroup memory implementation found"))
	})

	It("raises the cpu_utilization pressure from the host's /proc/stat, smoothed", func() {
		root := hostRoot(newDir())
		root.write("proc/stat", "cpu  100 0 0 100 0 0 0 0 0 0\n")
		cfg := fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.cpu_utilization, typed_config: {"@type": %s}}], `+
			`actions: [{name: envoy.overload_actions.stop_accepting_requests, triggers: [{name: envoy.resource_monitors.cpu_utilization, threshold: {value: 0.2}}]}]}`, cpuMonitorURL)
		s := StartEnv(newDir(), overloadConfig(cfg, ""), root.env())
		addr := listenerAddr(s, "web")
		Expect(getStatus(addr)).To(Equal(200))
		// Every rewrite adds 100 busy ticks and no idle one: each refresh
		// that sees it moves the average 5% of the way to 1.
		work := 100
		Eventually(func() string {
			work += 100
			root.write("proc/stat", fmt.Sprintf("cpu  %d 0 0 100 0 0 0 0 0 0\n", work))
			return statValue(s, "overload.envoy.overload_actions.stop_accepting_requests.active")
		}).WithPolling(60 * time.Millisecond).Should(Equal("1"))
		Expect(intStat(s, "overload.envoy.resource_monitors.cpu_utilization.pressure")).To(BeNumerically(">=", 20))
		Expect(getStatus(addr)).To(Equal(503))
	})

	It("refuses a CONTAINER cpu_utilization monitor where no cgroup CPU controller is found", func() {
		dir := newDir()
		cfg := filepath.Join(dir, "bootstrap.yaml")
		om := fmt.Sprintf(`{resource_monitors: [{name: envoy.resource_monitors.cpu_utilization, typed_config: {"@type": %s, mode: CONTAINER}}]}`, cpuMonitorURL)
		Expect(os.WriteFile(cfg, []byte(overloadConfig(om, "")), 0o600)).To(Succeed())
		r := runEnv(hostRoot(newDir()).env(), "--mode", "validate", "-c", cfg)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(strings.Contains(r.Stderr, "overload_manager.resource_monitors[0].typed_config.mode: no supported cgroup CPU implementation found")).To(BeTrue(), r.Stderr)
	})
})
