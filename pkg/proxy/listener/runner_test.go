package listener

import (
	"testing"
	"time"
)

// idleRunners is how many goroutines wait for work in r.
func idleRunners(r *runner) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.idle)
}

// waitIdle waits (bounded) until n goroutines wait in r.
func waitIdle(t *testing.T, r *runner, n int) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for idleRunners(r) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines waiting, want %d", idleRunners(r), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRunnerReusesGoroutines(t *testing.T) {
	stop := make(chan struct{})
	r := &runner{stop: stop}
	done := make(chan int, 1)
	for i := range 5 {
		r.run(func() { done <- i })
		if got := <-done; got != i {
			t.Fatalf("ran %d, want %d", got, i)
		}
		waitIdle(t, r, 1)
	}
	if n := r.spawned.Load(); n != 1 {
		t.Errorf("%d goroutines started for 5 connections one after the other, want 1", n)
	}

	// Work that blocks does not hold up the next: it gets a goroutine
	// of its own.
	release := make(chan struct{})
	r.run(func() { <-release; done <- 1 })
	r.run(func() { done <- 2 })
	if got := <-done; got != 2 {
		t.Fatalf("ran %d first, want the unblocked 2", got)
	}
	close(release)
	<-done
	waitIdle(t, r, 2)
	if n := r.spawned.Load(); n != 2 {
		t.Errorf("%d goroutines started, want 2", n)
	}

	// Once the listener stops, waiting goroutines end, and work still
	// runs.
	close(stop)
	waitIdle(t, r, 0)
	r.run(func() { done <- 3 })
	if got := <-done; got != 3 {
		t.Fatalf("ran %d, want 3", got)
	}
	time.Sleep(10 * time.Millisecond)
	if n := idleRunners(r); n != 0 {
		t.Errorf("%d goroutines wait after the listener stopped", n)
	}
}
