package e2e

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// executableResident sums, over the read-only private mappings of pid's
// executable in /proc/PID/smaps (its code and read-only data, found by
// path or by inode), the mapped and the resident bytes.
func executableResident(pid int) (mapped, resident int64) {
	GinkgoHelper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	Expect(err).NotTo(HaveOccurred())
	var st syscall.Stat_t
	Expect(syscall.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st)).To(Succeed())
	ino := strconv.FormatUint(st.Ino, 10)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	Expect(err).NotTo(HaveOccurred())
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			// A mapping's header: addresses, permissions, offset, device, inode, path.
			in = (strings.Join(f[5:], " ") == exe || f[4] == ino) && (f[1] == "r-xp" || f[1] == "r--p")
			if in {
				lo, hi, _ := strings.Cut(f[0], "-")
				a, err1 := strconv.ParseUint(lo, 16, 64)
				z, err2 := strconv.ParseUint(hi, 16, 64)
				Expect(err1).NotTo(HaveOccurred())
				Expect(err2).NotTo(HaveOccurred())
				mapped += int64(z - a)
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			resident += n << 10
		}
	}
	Expect(mapped).To(BeNumerically(">", 0), "no read-only mapping of %s in /proc/%d/smaps", exe, pid)
	return mapped, resident
}

// executableNotRandom lists the read-only private mappings of pid's
// executable whose VmFlags in /proc/PID/smaps lack "rr" (MADV_RANDOM: a
// fault there reads and maps the page asked for, not its neighbours).
func executableNotRandom(pid int) (notRandom []string) {
	GinkgoHelper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	Expect(err).NotTo(HaveOccurred())
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	Expect(err).NotTo(HaveOccurred())
	current, seen := "", 0
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			current = ""
			if strings.Join(f[5:], " ") == exe && (f[1] == "r-xp" || f[1] == "r--p") {
				current = f[0]
				seen++
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && current != "" {
			if !slices.Contains(strings.Fields(v), "rr") {
				notRandom = append(notRandom, current)
			}
		}
	}
	Expect(seen).To(BeNumerically(">", 0), "no read-only mapping of %s in /proc/%d/smaps", exe, pid)
	return notRandom
}

// Start-up touches most of the binary (every package's initialisation, the
// descriptors of every Envoy API it knows); once serving, the sidecar
// releases those pages, and what it then runs faults back in.
var _ = Describe("Start-up memory", func() {
	It("releases the executable's pages once serving, and keeps proxying", func() {
		be := startClusterBackend("kept")
		port := freePort()
		s := Start(newDir(), trafficBootstrap(port, "", weightedEndpoint(be.port, 1)), "--log-level", "debug")
		Eventually(s.Stderr, 10*time.Second).Should(ContainSubstring("released start-up memory"))
		pid := s.session.Command.Process.Pid
		mapped, resident := executableResident(pid)
		// Before the release about four fifths of these mappings are
		// resident (package initialisation touches nearly every page);
		// what the idle server touches afterwards is a small part.
		Expect(resident).To(BeNumerically("<", mapped/2),
			"%d of the executable's %d read-only bytes still resident", resident, mapped)

		client := &http.Client{Timeout: 5 * time.Second}
		for range 20 {
			code, body := getThrough(client, port)
			Expect(code).To(Equal(http.StatusOK), body)
			Expect(body).To(HavePrefix("kept "))
		}
		Expect(s.Get("/ready").Status).To(Equal(http.StatusOK))
		Expect(s.Get("/stats").Body).To(ContainSubstring("cluster.svc.upstream_rq_total: 20"))
		// What faults back in is read page by page: the executable's
		// read-only mappings are advised for random access, so that a
		// fault does not map the 64 KiB around the page it needs.
		Expect(executableNotRandom(pid)).To(BeEmpty())
	})
})
