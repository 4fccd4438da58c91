package e2e

import (
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The injected_resource monitor (a pressure read from a file replaced by a
// move) and fixed_heap's max_heap_size_bytes_runtime, through the built
// binary.

// injectedMonitorURL is the injected_resource monitor's type URL.
const injectedMonitorURL = "type.googleapis.com/envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig"

// injectPressure writes text beside path and moves it over path, the
// change the injected_resource monitor follows.
func injectPressure(path, text string) {
	GinkgoHelper()
	tmp := filepath.Join(filepath.Dir(path), ".next")
	Expect(os.WriteFile(tmp, []byte(text), 0o644)).To(Succeed())
	Expect(os.Rename(tmp, path)).To(Succeed())
}

var _ = Describe("Overload manager injected_resource and runtime heap maximum", func() {
	It("sheds requests while the injected pressure file says so, reads only files moved into place, and counts bad files as failed updates", func() {
		path := filepath.Join(newDir(), "pressure")
		injectPressure(path, "0.1\n")
		om := fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": %s, filename: %q}}], `+
			`actions: [{name: envoy.overload_actions.stop_accepting_requests, triggers: [{name: envoy.resource_monitors.injected_resource, threshold: {value: 0.9}}]}]}`,
			injectedMonitorURL, path)
		s := Start(newDir(), overloadConfig(om, ""))
		const pressure = "overload.envoy.resource_monitors.injected_resource.pressure"
		const active = "overload.envoy.overload_actions.stop_accepting_requests.active"
		waitStat(s, pressure, "10")
		addr := listenerAddr(s, "web")
		Expect(getStatus(addr)).To(Equal(200))

		By("a file written in place is not read")
		Expect(os.WriteFile(path, []byte("0.95"), 0o644)).To(Succeed())
		Consistently(func() string { return statValue(s, pressure) }, "300ms", "50ms").Should(Equal("10"))

		By("a file moved into place is")
		injectPressure(path, "0.95")
		waitStat(s, active, "1")
		Expect(statValue(s, pressure)).To(Equal("95"))
		Expect(getStatus(addr)).To(Equal(503))

		By("a pressure that does not parse, or out of [0, 1], fails the updates")
		injectPressure(path, "1.5")
		Eventually(func() string {
			return statValue(s, "overload.envoy.resource_monitors.injected_resource.failed_updates")
		}, "10s", "20ms").ShouldNot(Equal("0"))

		injectPressure(path, "0")
		waitStat(s, active, "0")
		Expect(getStatus(addr)).To(Equal(200))
	})

	It("refuses an injected_resource file whose directory does not exist", func() {
		om := fmt.Sprintf(`{resource_monitors: [{name: envoy.resource_monitors.injected_resource, typed_config: {"@type": %s, filename: %q}}]}`,
			injectedMonitorURL, filepath.Join(newDir(), "missing", "pressure"))
		r, _ := validate("b.yaml", overloadConfig(om, ""))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("overload_manager.resource_monitors[0].typed_config.filename: the file's directory cannot be watched"))
	})

	It("takes fixed_heap's maximum from the runtime key at each refresh", func() {
		// A maximum far above the heap, then one far below it.
		om := fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": %s, max_heap_size_bytes_runtime: {default_value: 1000000000000, runtime_key: overload.heap_max}}}], `+
			`actions: [{name: envoy.overload_actions.stop_accepting_requests, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.9}}]}]}`, fixedHeapURL)
		s := Start(newDir(), overloadConfig(om, ""))
		const active = "overload.envoy.overload_actions.stop_accepting_requests.active"
		waitStat(s, "overload.envoy.resource_monitors.fixed_heap.pressure", "0")
		addr := listenerAddr(s, "web")
		Expect(getStatus(addr)).To(Equal(200))

		Expect(s.Post("/runtime_modify?overload.heap_max=1000").Status).To(Equal(200))
		waitStat(s, active, "1")
		Expect(getStatus(addr)).To(Equal(503))

		Expect(s.Post("/runtime_modify?overload.heap_max=").Status).To(Equal(200))
		waitStat(s, active, "0")
		Expect(getStatus(addr)).To(Equal(200))
	})
})
