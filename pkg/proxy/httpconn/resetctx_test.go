package httpconn

import (
	"context"
	"errors"
	"testing"
	"time"
)

// closedWithin reports whether ch is closed within a generous bound.
func closedWithin(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestLazyResetCtxResetWhileWaiting(t *testing.T) {
	s := &stream{}
	ctx := s.resetCtx.start(s, context.Background())
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before any reset = %v", err)
	}
	done := ctx.Done()
	s.peerReset.Store(true)
	s.interrupt()
	if !closedWithin(done) {
		t.Fatal("a reset did not end the context")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", ctx.Err())
	}
	s.resetCtx.end()
	s.upMu.Lock()
	armed := s.upCancel != nil
	s.upMu.Unlock()
	if armed {
		t.Fatal("end left the reset armed")
	}
}

func TestLazyResetCtxResetBeforeUse(t *testing.T) {
	s := &stream{}
	s.peerReset.Store(true)
	ctx := s.resetCtx.start(s, context.Background())
	defer s.resetCtx.end()
	if !closedWithin(ctx.Done()) {
		t.Fatal("a reset that came first did not end the context")
	}
}

func TestLazyResetCtxParent(t *testing.T) {
	s := &stream{}
	type key struct{}
	deadline := time.Now().Add(time.Hour)
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
	ctx := s.resetCtx.start(s, parent)
	defer s.resetCtx.end()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
		t.Fatalf("Deadline = %v, %v; want the parent's", d, ok)
	}
	if ctx.Value(key{}) != "v" {
		t.Fatal("Value does not reach the parent")
	}
	done := ctx.Done()
	cancel()
	if !closedWithin(done) {
		t.Fatal("the parent's end did not end the context")
	}
}

func TestLazyResetCtxUnusedCostsNothingAndEnds(t *testing.T) {
	s := &stream{}
	allocs := testing.AllocsPerRun(100, func() {
		s.resetCtx.start(s, context.Background())
		s.resetCtx.end()
	})
	if allocs != 0 {
		t.Fatalf("an unused reset context allocated %v times", allocs)
	}
	ctx := s.resetCtx.start(s, context.Background())
	s.resetCtx.end()
	// Looked at after its end, it reads as ended and arms nothing.
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err after end = %v, want context.Canceled", ctx.Err())
	}
	s.upMu.Lock()
	armed := s.upCancel != nil
	s.upMu.Unlock()
	if armed {
		t.Fatal("a look after end armed the reset")
	}
}

func TestLazyResetCtxValueDerivesNothing(t *testing.T) {
	s := &stream{}
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	defer cancel()
	// The pool reads values of every request: that must not make the
	// derived context and its cancel func.
	allocs := testing.AllocsPerRun(100, func() {
		ctx := s.resetCtx.start(s, parent)
		if ctx.Value(key{}) != "v" {
			t.Fatal("Value does not reach the parent")
		}
		if _, ok := ctx.Deadline(); ok {
			t.Fatal("a deadline the parent does not have")
		}
		s.resetCtx.end()
	})
	if allocs != 0 {
		t.Fatalf("a value lookup allocated %v times", allocs)
	}
	// A reset after a value lookup still ends the context.
	ctx := s.resetCtx.start(s, parent)
	defer s.resetCtx.end()
	_ = ctx.Value(key{})
	done := ctx.Done()
	s.peerReset.Store(true)
	s.interrupt()
	if !closedWithin(done) {
		t.Fatal("a reset after a value lookup did not end the context")
	}
	// Once reset, lookups see the derived, cancelled context.
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("Cause = %v, want context.Canceled", context.Cause(ctx))
	}
}
