package grpcservice

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"
)

// TestCallMetadata: a call's own metadata (a span's context) goes after
// the channel's initial metadata, replacing the values of its keys, and
// leaves the channel's metadata as configured.
func TestCallMetadata(t *testing.T) {
	ch := &Channel{metadata: metadata.Pairs("a", "1", "traceparent", "configured")}
	ctx := WithCallMetadata(context.Background(), metadata.Pairs("traceparent", "span"))
	cctx, cancel := ch.CallContext(ctx, true)
	defer cancel()
	md, _ := metadata.FromOutgoingContext(cctx)
	if got := md.Get("traceparent"); len(got) != 1 || got[0] != "span" {
		t.Errorf("traceparent %v, want [span]", got)
	}
	if got := md.Get("a"); len(got) != 1 || got[0] != "1" {
		t.Errorf("a %v, want [1]", got)
	}
	if got := ch.metadata.Get("traceparent"); got[0] != "configured" {
		t.Errorf("the channel's metadata changed: %v", got)
	}
	// Without a call's metadata, or with an empty one, the channel's.
	for _, ctx := range []context.Context{context.Background(), WithCallMetadata(context.Background(), nil)} {
		cctx, cancel := ch.CallContext(ctx, true)
		md, _ := metadata.FromOutgoingContext(cctx)
		cancel()
		if got := md.Get("traceparent"); len(got) != 1 || got[0] != "configured" {
			t.Errorf("traceparent %v, want [configured]", got)
		}
	}
}
