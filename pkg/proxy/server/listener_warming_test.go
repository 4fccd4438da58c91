package server

import (
	"testing"
	"time"
)

// TestWarmingStartsTargets checks that a listener's warming starts the
// targets that have a start (a filter's first JWKS fetch) when it begins,
// and is ready only once they are; a filter without a listener is
// started at once.
func TestWarmingStartsTargets(t *testing.T) {
	w := &listenerWarming{}
	ready := make(chan struct{})
	starts := 0
	f := filterServices{warm: w}
	f.AddInitTarget("Jwks async fetching url=http://idp/jwks", func() { starts++ }, ready)
	if starts != 0 {
		t.Fatal("started before the listener warmed")
	}
	if got := w.unready(); len(got) != 1 || got[0] != "Jwks async fetching url=http://idp/jwks" {
		t.Fatalf("unready %v", got)
	}
	done := w.ready()
	if starts != 1 {
		t.Fatalf("%d starts once warming began", starts)
	}
	select {
	case <-done:
		t.Fatal("ready before the target")
	default:
	}
	close(ready)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not ready after the target")
	}

	started := false
	filterServices{}.AddInitTarget("x", func() { started = true }, make(chan struct{}))
	if !started {
		t.Fatal("without a listener, the target was not started at once")
	}
}
