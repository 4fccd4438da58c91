package httpconn

import (
	"context"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// upstreamBase is the context the request's upstream connections are
// made in: the connection manager's, carrying the source original_src
// chose (the HTTP filter's for this request, else the listener filter's
// for the connection), which the cluster binds and keys its pools by. A
// request without one pays nothing.
func (s *stream) upstreamBase() context.Context {
	ctx := s.m.ctx
	if s.connUpCtx != nil {
		// The downstream side, for a cluster that sends a PROXY header
		// upstream (Envoy's ProxyProtocolFilterState).
		ctx = s.connUpCtx
	}
	if s.route != nil && s.route.HighPriority {
		// The cluster's HIGH circuit breakers count the request.
		ctx = upstream.WithHighPriority(ctx)
	}
	if !s.upSource.Addr.IsValid() {
		return ctx
	}
	return upstream.WithSource(ctx, s.upSource)
}

// SetUpstreamSource implements httpfilter.Stream.
func (s *stream) SetUpstreamSource(src upstream.Source) { s.upSource = src }
