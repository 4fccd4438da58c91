package accesslog

import (
	"testing"
	"time"
)

func TestSender(t *testing.T) {
	delivered, last := make(chan struct{}, 4), 0
	s := StartSender(time.Hour, func() { delivered <- struct{}{} }, func() { last++ })
	// Woken, it delivers without waiting for its interval.
	s.Wake()
	select {
	case <-delivered:
	case <-time.After(10 * time.Second):
		t.Fatal("a wake-up made no delivery")
	}
	if s.Closed() {
		t.Error("Closed before Close")
	}
	if !s.Close(time.Second) {
		t.Error("the first Close reported the sender closed already")
	}
	// Close waited for the last delivery, made once.
	if last != 1 || !s.Closed() {
		t.Errorf("last delivery made %d times, Closed %v; want 1, true", last, s.Closed())
	}
	if s.Close(time.Second) {
		t.Error("a second Close reported a first")
	}
	if s.Context().Err() == nil {
		t.Error("the calls' context is not done after Close")
	}
}
