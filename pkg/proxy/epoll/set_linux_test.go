//go:build linux

package epoll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitReturnsReadyDescriptor: Wait sleeps until a registered
// descriptor is readable and returns its event with the registered data.
func TestWaitReturnsReadyDescriptor(t *testing.T) {
	s, err := New("test epoll", 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: 7, Pad: 42}
	if err := s.Ctl(unix.EPOLL_CTL_ADD, fds[0], &ev); err != nil {
		t.Fatal(err)
	}
	got := make(chan []unix.EpollEvent, 1)
	go func() {
		evs, err := s.Wait()
		if err != nil {
			t.Error(err)
		}
		got <- append([]unix.EpollEvent(nil), evs...)
	}()
	select {
	case evs := <-got:
		t.Fatalf("Wait returned %v before anything was written", evs)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := unix.Write(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-got:
		if len(evs) != 1 || evs[0].Fd != 7 || evs[0].Pad != 42 || evs[0].Events&unix.EPOLLIN == 0 {
			t.Fatalf("events %+v, want one EPOLLIN with data 7/42", evs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once the descriptor was readable")
	}
}

// TestWaitReturnsForQueuedWork: while more reports work, Wait returns at
// once, with no event.
func TestWaitReturnsForQueuedWork(t *testing.T) {
	s, err := New("test epoll", 8, func() bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan int, 1)
	go func() {
		evs, err := s.Wait()
		if err != nil {
			t.Error(err)
		}
		done <- len(evs)
	}()
	select {
	case n := <-done:
		if n != 0 {
			t.Fatalf("%d events from an empty set", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait waited although more reported queued work")
	}
}
