package sockio

import (
	"syscall"
	"unsafe"
)

// RawIO makes one read(2) or write(2) (trap is syscall.SYS_READ or
// syscall.SYS_WRITE) of p, not empty, on the non-blocking socket fd, again
// when a signal interrupts it, as a raw system call (see the package
// comment): the byte count, or the call's error number (EAGAIN when the
// socket has nothing to read or no room to write).
func RawIO(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		switch e {
		case 0:
			return int(n), 0
		case syscall.EINTR:
			continue
		default:
			return 0, e
		}
	}
}
