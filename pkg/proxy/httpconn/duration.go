package httpconn

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// The bodies of the max stream duration replies, Envoy's.
const (
	bodyMaxDuration         = "downstream duration timeout"
	bodyUpstreamMaxDuration = "upstream max stream duration reached"
)

// A stream's maximum durations are deadlines, like its other timeouts:
// durationEnd (the connection manager's or the route's
// max_stream_duration, from the stream's start) and upDurationEnd (the
// cluster's, from the moment the upstream request has a connection) join
// the socket deadlines, waits and contexts of every phase, and the
// timeout that ends a phase asks maxDurationReached whether one of them
// was the cause.

// armDuration starts the connection manager's max_stream_duration for a
// stream that began at real.
func (s *stream) armDuration(real time.Time) {
	s.durationEnd, s.durationTimer = time.Time{}, false
	s.upDurationEnd, s.durationFired = time.Time{}, false
	if d := s.m.cfg.maxStreamDuration; d > 0 {
		s.durationEnd, s.durationTimer = real.Add(d), true
	}
}

// refreshDuration applies the route r just matched to the stream's
// maximum duration, as Envoy's refreshDurationTimeout does: the route's
// max_stream_duration replaces the connection manager's (0 lifting it);
// with grpc_timeout_header_max, a valid grpc-timeout header, capped at
// that maximum and less grpc_timeout_header_offset, does; a route without
// max_stream_duration falls back to the connection manager's. On a route
// with max_stream_duration, a gRPC request's grpc-timeout is rewritten to
// the duration chosen (or removed when there is none). The duration still
// counts from the stream's start.
func (s *stream) refreshDuration(r *router.Route) {
	if r == nil || r.Direct != nil || r.Redirect != nil {
		return
	}
	sd := r.StreamDuration
	var (
		timeout time.Duration
		none    bool
	)
	header, fromHeader := time.Duration(0), false
	if sd != nil && sd.GrpcHeaderMaxSet {
		if v, ok := s.reqHeaders.Get("grpc-timeout"); ok {
			header, fromHeader = parseGrpcTimeout(v)
		}
	}
	switch {
	case fromHeader:
		timeout = header
		if sd.GrpcHeaderMax != 0 && timeout > sd.GrpcHeaderMax {
			timeout = sd.GrpcHeaderMax
		}
		if timeout != 0 && sd.GrpcHeaderOffset > 0 {
			timeout = max(timeout-sd.GrpcHeaderOffset, 0)
		}
	case sd != nil && sd.MaxSet:
		timeout, none = sd.Max, sd.Max == 0
	case s.m.cfg.maxStreamDuration > 0:
		timeout = s.m.cfg.maxStreamDuration
	default:
		none = true
	}
	rewrite := sd != nil && s.grpcRequest()
	if none {
		// Envoy removes the header only where a duration timer was
		// running, which its lifting stops.
		if s.durationTimer && rewrite {
			s.reqHeaders.Del("grpc-timeout")
		}
		s.setDurationEnd(time.Time{})
		return
	}
	if rewrite {
		s.grpcTimeoutBuf = appendGrpcTimeout(s.grpcTimeoutBuf[:0], timeout)
		s.reqHeaders.Set("grpc-timeout", view(s.grpcTimeoutBuf))
	}
	s.durationTimer = true
	s.setDurationEnd(s.t0.Add(timeout))
}

// setDurationEnd makes end the stream's maximum duration. When it moves,
// the read deadline of an HTTP/1 request body still to come moves with it
// (an HTTP/2 stream reads it at each wait, the other phases when they
// begin).
func (s *stream) setDurationEnd(end time.Time) {
	if end.Equal(s.durationEnd) {
		return
	}
	s.durationEnd = end
	if c := s.conn; c != nil && s.body != nil && !s.bodyDone {
		c.armRead(time.Now())
	}
}

// durationLimit is the earlier of the stream's maximum durations, the
// zero time for none.
func (s *stream) durationLimit() time.Time {
	return earliest(s.durationEnd, s.upDurationEnd)
}

// writeLimit is durationLimit for the response's writes, which run on
// the stream's goroutine: none once a maximum duration fired, so that the
// reply to it is not cut by the deadline that has just passed (a timer
// fires once). The limits themselves stay as they are, as the HTTP/2
// transport's goroutine may still read them while it reads the request
// body.
func (s *stream) writeLimit() time.Time {
	if s.durationFired {
		return time.Time{}
	}
	return s.durationLimit()
}

// armUpstreamDuration starts the cluster's max_stream_duration for the
// upstream request that just got its connection, at now.
func (s *stream) armUpstreamDuration(cl UpstreamCluster, now time.Time) {
	s.upDurationEnd = after(now, cl.MaxStreamDuration())
}

// startUpstreamDuration is armUpstreamDuration from the current time, read
// only for a cluster that has a max_stream_duration.
func (s *stream) startUpstreamDuration(cl UpstreamCluster) {
	if d := cl.MaxStreamDuration(); d > 0 {
		s.upDurationEnd = time.Now().Add(d)
		return
	}
	s.upDurationEnd = time.Time{}
}

// durationCause is which maximum duration has passed, if any.
type durationCause uint8

const (
	noDuration durationCause = iota
	// streamDuration: the connection manager's or the route's.
	streamDuration
	// upstreamDuration: the cluster's.
	upstreamDuration
)

// durationPassed reports which of the stream's maximum durations has
// passed at now: the earlier one when both have; none once one fired.
func (s *stream) durationPassed(now time.Time) durationCause {
	if s.durationFired {
		return noDuration
	}
	down := !s.durationEnd.IsZero() && !now.Before(s.durationEnd)
	up := !s.upDurationEnd.IsZero() && !now.Before(s.upDurationEnd)
	switch {
	case down && (!up || !s.upDurationEnd.Before(s.durationEnd)):
		return streamDuration
	case up:
		return upstreamDuration
	}
	return noDuration
}

// maxDurationReached answers the stream if one of its maximum durations
// has passed at now, and reports whether it did. The connection manager's
// (or route's) gets Envoy's 408 "downstream duration timeout" (504 once
// the whole request has arrived; DEADLINE_EXCEEDED for gRPC), the
// cluster's 408 or 504 "upstream max stream duration reached" with the
// UMSDR flag; a response that has started is reset instead.
func (s *stream) maxDurationReached(now time.Time) bool {
	return s.maxDurationReachedWith(now, s.bodyDone)
}

// maxDurationReachedWith is maxDurationReached, with complete telling
// whether the whole request has arrived.
func (s *stream) maxDurationReachedWith(now time.Time, complete bool) bool {
	cause := s.durationPassed(now)
	if cause == noDuration {
		return false
	}
	s.tLast = now
	s.durationFired = true
	status := 408
	if complete {
		status = 504
	}
	s.countDuration(cause)
	if cause == streamDuration {
		s.localReplyGrpc(status, int64(codes.DeadlineExceeded), bodyMaxDuration, 0, "max_duration_timeout")
	} else {
		s.localReply(status, bodyUpstreamMaxDuration, accesslog.UpstreamMaxStreamDurationReached, "upstream_max_stream_duration_reached")
	}
	return true
}

// countDuration counts a maximum duration reached in its stat.
func (s *stream) countDuration(cause durationCause) {
	switch {
	case cause == streamDuration:
		s.m.stats.rqMaxDuration.Inc()
	case s.cluster != nil:
		s.cluster.Stats().UpstreamRqMaxDurationReached().Inc()
	}
}

// tunnelHardLimit accounts for a tunnel its hard limit ended at now: a
// maximum duration (the stream's, or the cluster's) or else the request
// timeout. The tunnel's response has started, so the stream is cut
// rather than answered.
func (s *stream) tunnelHardLimit(now time.Time) {
	switch cause := s.durationPassed(now); cause {
	case streamDuration:
		s.countDuration(cause)
		s.details = "max_duration_timeout"
	case upstreamDuration:
		s.countDuration(cause)
		s.flags |= accesslog.UpstreamMaxStreamDurationReached
		s.details = "upstream_max_stream_duration_reached"
	default:
		s.m.stats.rqTimeout.Inc()
		s.details = "request_overall_timeout"
	}
}

// connectContext is the context an upstream connection is acquired
// under: the manager's, ending at the stream's maximum duration if it
// has one.
func (s *stream) connectContext() (context.Context, context.CancelFunc) {
	if s.durationEnd.IsZero() {
		return s.upstreamBase(), func() {}
	}
	return context.WithDeadline(s.upstreamBase(), s.durationEnd)
}
