package stats

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestSenderKeepsOneFlushWaiting(t *testing.T) {
	release := make(chan struct{})
	var (
		mu   sync.Mutex
		sent [][]int
	)
	s := NewSender(func(_ context.Context, msgs []int) {
		if msgs[0] == 1 {
			<-release // the service is slow to take the first flush
		}
		mu.Lock()
		sent = append(sent, msgs)
		mu.Unlock()
	})
	if s.Queue([]int{1}) {
		t.Fatal("the first flush replaced something")
	}
	// Wait until the first flush is being sent, then queue two more
	// while it is.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		taken := !s.waiting
		s.mu.Unlock()
		if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first flush was never taken")
		}
		time.Sleep(time.Millisecond)
	}
	if s.Queue([]int{2}) {
		t.Error("the second flush replaced the one being sent")
	}
	if !s.Queue([]int{3}) {
		t.Error("the third flush did not replace the waiting second")
	}
	close(release)
	s.Close(10 * time.Second)
	if want := [][]int{{1}, {3}}; !slices.EqualFunc(sent, want, slices.Equal) {
		t.Fatalf("sent %v, want %v", sent, want)
	}
	if s.Queue([]int{4}) {
		t.Error("a queue after Close replaced something")
	}
}

func TestSenderCloseCancelsAStuckSend(t *testing.T) {
	cancelled := make(chan struct{})
	s := NewSender(func(ctx context.Context, _ []int) {
		<-ctx.Done() // a service that never answers
		close(cancelled)
	})
	s.Queue([]int{1})
	s.Close(10 * time.Millisecond)
	select {
	case <-cancelled:
	default:
		t.Fatal("Close returned while the send was not cancelled")
	}
}
