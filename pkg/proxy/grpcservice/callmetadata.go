package grpcservice

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// callMetadataKey is the context key of WithCallMetadata's metadata.
type callMetadataKey struct{}

// WithCallMetadata returns a context whose calls (CallContext) send md
// after the channel's initial metadata, replacing the values of its keys:
// the trace context of a call's span, which Envoy's asynchronous client
// writes into the headers once the initial metadata is in them. md's keys
// are lower case; md is not copied and must not change afterwards.
func WithCallMetadata(ctx context.Context, md metadata.MD) context.Context {
	if len(md) == 0 {
		return ctx
	}
	return context.WithValue(ctx, callMetadataKey{}, md)
}
