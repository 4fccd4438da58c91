package userspace

import (
	"context"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// passthroughKey is the context key of the metadata an upstream
// connection hands the internal listener's connection.
type passthroughKey struct{}

// WithPassthrough returns ctx carrying md, the metadata the
// internal_upstream transport socket passes to the connection an
// internal dial opens (Envoy's PassthroughState).
func WithPassthrough(ctx context.Context, md *corev3.Metadata) context.Context {
	if md == nil {
		return ctx
	}
	return context.WithValue(ctx, passthroughKey{}, md)
}

// PassthroughFrom returns the metadata WithPassthrough put in ctx, nil for
// none.
func PassthroughFrom(ctx context.Context) *corev3.Metadata {
	md, _ := ctx.Value(passthroughKey{}).(*corev3.Metadata)
	return md
}

// SetPassthroughMetadata records, before the internal listener accepts
// the connection, the metadata its upstream side passes on.
func (c *Conn) SetPassthroughMetadata(md *corev3.Metadata) { c.passthrough = md }

// PassthroughMetadata is the metadata the upstream side passed on, which
// starts the accepted connection's dynamic metadata (Envoy merges it
// there before the listener filters run); nil for none.
func (c *Conn) PassthroughMetadata() *corev3.Metadata { return c.passthrough }
