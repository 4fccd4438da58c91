package e2e

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// expectGolden compares got with testdata/golden/<name>, or rewrites that
// file when the suite runs with -update. Callers replace anything that varies
// between runs (temporary paths, ports) with fixed placeholders first.
func expectGolden(name, got string) {
	GinkgoHelper()
	path := filepath.Join("testdata", "golden", name)
	if golden.Update() {
		Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "golden file missing; run the suite with -update and review the result")
	Expect(got).To(Equal(string(want)), "output differs from %s (run with -update if the change is intended)", path)
}
