package e2e

import (
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("watchdogs.main_thread_watchdog", func() {
	It("counts misses and mega misses past its timeouts when the process cannot run", func() {
		s := Start(newDir(), minimalYAML+`
watchdogs: {main_thread_watchdog: {miss_timeout: 0.05s, megamiss_timeout: 0.1s}}
`)
		Expect(statValue(s, "server.main_thread.watchdog_mega_miss")).To(Equal("0"))
		// Stopped, no goroutine runs: the watchdog's next wake-up comes
		// at least the stop's length after its previous one, past both
		// timeouts (a stall no in-process hook could make as surely).
		s.Signal(syscall.SIGSTOP)
		time.Sleep(400 * time.Millisecond)
		s.Signal(syscall.SIGCONT)
		Eventually(func() int {
			n, _ := strconv.Atoi(statValue(s, "server.main_thread.watchdog_mega_miss"))
			return n
		}).Should(BeNumerically(">=", 1))
		n, _ := strconv.Atoi(statValue(s, "server.main_thread.watchdog_miss"))
		Expect(n).To(BeNumerically(">=", 1))
	})

	It("refuses worker_watchdog and the kill timeouts with their paths", func() {
		r, _ := validate("b.yaml", minimalYAML+`
watchdogs: {main_thread_watchdog: {kill_timeout: 10s}, worker_watchdog: {miss_timeout: 1s}}
`)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("watchdogs.worker_watchdog: not supported by Outrigger"))
		Expect(r.Stderr).To(ContainSubstring("watchdogs.main_thread_watchdog.kill_timeout: not supported by Outrigger"))
	})
})
