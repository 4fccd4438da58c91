package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// leasePort takes an exclusive lock on a file named after the port, shared by
// every e2e process on the machine, and keeps it for the life of this
// process: the kernel drops the lock when the process ends, however it ends,
// so a crashed run never leaves a port leased. It reports false when another
// process holds the port, and true (without a lease) when the lock directory
// cannot be used at all, so that a read-only temporary directory degrades to
// the old in-process behaviour instead of failing every spec.
func leasePort(port int) bool {
	dir := filepath.Join(os.TempDir(), "outrigger-e2e-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	// A bare descriptor rather than an *os.File: a File's finalizer would
	// close it, and drop the lease, once nothing refers to it.
	fd, err := syscall.Open(filepath.Join(dir, fmt.Sprintf("%d.lock", port)), syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		syscall.Close(fd)
		return false
	}
	return true // the descriptor is the lease: deliberately never closed
}

var _ = Describe("Port leases between e2e processes", func() {
	It("refuses a port already leased, and freePort skips it", func() {
		port := freePort()
		Expect(leasePort(port)).To(BeFalse(), "a second lock on port %d's file must fail while the first is held", port)
		Expect(freePort()).NotTo(Equal(port))
	})
})
