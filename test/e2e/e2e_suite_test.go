// Package e2e is the process tier of Outrigger's end-to-end tests: it runs the
// built sidecar binary as a child process and drives it only from the outside,
// through its command line, its files, its signals and its admin interface over
// HTTP on the loopback address, exactly as an operator would.
//
// Run it with `make test-e2e` (which builds bin/sidecar and points SIDECAR_BIN
// at it) or `go test ./test/e2e/...` (which builds the binary itself once).
package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// sidecarBin is the absolute path of the binary under test. It is set once by
// SynchronizedBeforeSuite on every ginkgo process and only read afterwards.
var sidecarBin string

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Processes start in milliseconds: a few seconds is a generous bound for
	// anything a spec waits for, and keeps a broken build from hanging the run.
	SetDefaultEventuallyTimeout(5 * time.Second)
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	SetDefaultConsistentlyDuration(300 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Outrigger sidecar process tier")
}

// The binary is built once (on ginkgo's first process when run in parallel)
// and its path handed to every process.
var _ = SynchronizedBeforeSuite(func() []byte {
	if bin := os.Getenv("SIDECAR_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		Expect(err).NotTo(HaveOccurred())
		Expect(abs).To(BeARegularFile(), "SIDECAR_BIN must name the built sidecar binary")
		return []byte(abs)
	}
	return []byte(buildSidecar())
}, func(path []byte) {
	sidecarBin = string(path)
})

// buildSidecar compiles ./cmd/sidecar from the module root into a directory
// that outlives the build step and is removed when the suite ends.
func buildSidecar() string {
	GinkgoHelper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	Expect(err).NotTo(HaveOccurred(), "locating the module root")
	modRoot := filepath.Dir(strings.TrimSpace(string(root)))

	dir, err := os.MkdirTemp("", "outrigger-e2e-bin-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)

	bin := filepath.Join(dir, "sidecar")
	// -buildvcs=auto stamps the revision that --version and /server_info
	// report, as `make build` does, whatever GOFLAGS the machine sets.
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "./cmd/sidecar")
	build.Dir = modRoot
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./cmd/sidecar:\n%s", out)
	return bin
}
