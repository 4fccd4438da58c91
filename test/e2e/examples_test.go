package e2e

import (
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// examplesDir is the repository's examples folder, seen from this package.
const examplesDir = "../../examples"

var _ = Describe("Shipped examples", func() {
	It("validates examples/quickstart.yaml, which make run serves", func() {
		r := Run("--mode", "validate", "-c", filepath.Join(examplesDir, "quickstart.yaml"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
	})

	It("serves the listener of examples/dynamic-listeners once LIVE", func() {
		// The example names its files relative to the repository root and
		// fixed ports; the copy moves both to this spec's own.
		dir := newDir()
		port := freePort()
		lds := readFile(filepath.Join(examplesDir, "dynamic-listeners", "lds.yaml"))
		Expect(lds).To(ContainSubstring("port_value: 10000"))
		writeFile(filepath.Join(dir, "lds.yaml"), strings.Replace(lds, "port_value: 10000", fmt.Sprintf("port_value: %d", port), 1))
		boot := readFile(filepath.Join(examplesDir, "dynamic-listeners", "bootstrap.yaml"))
		Expect(boot).To(ContainSubstring("path: examples/dynamic-listeners/lds.yaml"))
		boot = strings.Replace(boot, "path: examples/dynamic-listeners/lds.yaml", "path: "+filepath.Join(dir, "lds.yaml"), 1)
		boot = strings.Replace(boot, "port_value: 9901", "port_value: 0", 1)

		s := Start(dir, boot)
		s.WaitLive()
		Expect(getBody(fmt.Sprintf("127.0.0.1:%d", port))).To(Equal("hello v1\n"))
	})
})
