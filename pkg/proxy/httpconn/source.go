package httpconn

import (
	"context"
	"time"

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

// acquire is what the request tells the cluster's HTTP/1.1 pool with
// its acquisition (the same as upstreamBase's context carries): its
// route's priority and its source; a wait for a connection ends at deadline, or when
// its client is gone. The connection's number names the pool's share: a
// downstream connection's requests take and give back the same idle
// connections, and connections of different workers seldom meet on one
// share's lock.
func (s *stream) acquire(deadline time.Time) upstream.Acquire {
	return upstream.Acquire{
		High:     s.route != nil && s.route.HighPriority,
		Source:   s.upSource,
		Deadline: deadline,
		Gone:     s.clientGone,
		Share:    uint32(s.connID),
	}
}

// SetUpstreamSource implements httpfilter.Stream.
func (s *stream) SetUpstreamSource(src upstream.Source) { s.upSource = src }

// SetUpstreamOverrideHost implements httpfilter.Stream: the request's
// picks carry o (see pickContext).
func (s *stream) SetUpstreamOverrideHost(o upstream.OverrideHost) { s.override = o }

// noHostStatus is the status of a request no host was picked for: 503,
// or the stateful session's status_on_strict_destination_not_found when
// a strict request named a host the cluster does not have (a host it
// has with a health status it refuses still gets 503, as in Envoy).
func (s *stream) noHostStatus() int {
	if p := &s.pick; p.Override.Strict && p.OverrideOutcome == upstream.OverrideMissing && p.Override.MissingStatus != 0 {
		return p.Override.MissingStatus
	}
	return 503
}
