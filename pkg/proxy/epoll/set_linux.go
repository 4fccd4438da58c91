//go:build linux

package epoll

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Set is an epoll set with its ready list. One goroutine at a time calls
// Wait; Ctl may be called from any goroutine.
type Set struct {
	fd   int
	file *os.File // fd, for the netpoller
	rc   syscall.RawConn
	evs  []unix.EpollEvent
	n    int
	// more reports work the owner queued without an event (the set's
	// readiness alone would not end the wait); nil for none.
	more func() bool
	poll func(fd uintptr) bool
}

// New makes a set whose ready list holds up to size events; name names
// its descriptor (as in /proc/self/fd). more, if not nil, lets Wait
// return without an event while it reports true.
func New(name string, size int, more func() bool) (*Set, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	s := &Set{fd: fd, evs: make([]unix.EpollEvent, size), more: more}
	s.file = os.NewFile(uintptr(fd), name)
	if s.rc, err = s.file.SyscallConn(); err != nil {
		_ = s.file.Close()
		return nil, err
	}
	s.poll = s.take
	return s, nil
}

// Ctl adds, changes or removes fd's registration (epoll_ctl).
func (s *Set) Ctl(op, fd int, ev *unix.EpollEvent) error {
	return unix.EpollCtl(s.fd, op, fd, ev)
}

// Wait returns the events ready now, waiting in the netpoller until
// there are some (or more reports queued work: then it may return none).
// The slice is valid until the next Wait. An error means the set can no
// longer be waited on.
func (s *Set) Wait() ([]unix.EpollEvent, error) {
	s.n = 0
	err := s.rc.Read(s.poll)
	return s.evs[:s.n], err
}

// take takes the ready list without waiting; false has the netpoller wait
// until the set is readable. epoll_pwait with a zero timeout never blocks,
// so it is a raw system call: a loop that makes no scheduler-visible
// system call lets the runtime's monitor thread sleep while it waits,
// instead of being woken each time the loop resumes.
func (s *Set) take(fd uintptr) bool {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&s.evs[0])), uintptr(len(s.evs)), 0, 0, 0)
	if e != 0 {
		// EINTR: try again (the netpoller calls again at once); nothing
		// else can come of a valid set and buffer.
		s.n = 0
		return true
	}
	s.n = int(n)
	return n > 0 || (s.more != nil && s.more())
}

// Close closes the set; its registrations go with it.
func (s *Set) Close() error { return s.file.Close() }
