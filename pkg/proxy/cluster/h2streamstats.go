package cluster

import (
	"slices"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// h2ErrRefusedStream is HTTP/2's REFUSED_STREAM error code (RFC 9113 §7).
const h2ErrRefusedStream = 0x7

// h2StreamStats follows the streams of an upstream HTTP/2 connection from
// the frames its guard sees, for the cluster stats Envoy's HTTP/2 pool
// keeps per stream: a stream is open from the proxy's HEADERS that start
// it until its response ends (END_STREAM from the host) or either side
// resets it. A reset of an open stream counts in upstream_rq_rx_reset
// (by the host; REFUSED_STREAM aside, which Envoy counts apart) or
// upstream_rq_tx_reset (by the proxy, which Go's transport does when a
// request is cancelled); a connection that closes with open streams
// counts in upstream_cx_destroy_with_active_rq; a GOAWAY from the host in
// upstream_cx_close_notify; each stream started in upstream_rq_per_cx.
// The transport's reader and writers both report frames, hence the lock.
type h2StreamStats struct {
	tc *trackedConn
	cs *upstream.ClusterStats

	mu sync.Mutex
	// open are the open streams, in ascending order: the transport
	// starts streams with increasing ids, so a start appends, and an
	// end is a binary search and a short copy (a few streams are in
	// flight) rather than a map's hashing.
	open []uint32
	// last is the highest stream the proxy started: HEADERS on a stream
	// up to it are trailers, not a new stream.
	last     uint32
	goneAway bool
	// over is set once the connection ended (its read failed, or it
	// closed): the transport then resets the streams left, which is the
	// connection's end, not a reset by the proxy.
	over bool
}

// track starts following the streams for tc's cluster stats cs.
func (s *h2StreamStats) track(tc *trackedConn, cs *upstream.ClusterStats) {
	s.tc, s.cs = tc, cs
}

// outbound accounts for a frame the proxy sends.
func (s *h2StreamStats) outbound(h frameHead) {
	if s.cs == nil || h.stream == 0 {
		return
	}
	switch h.typ {
	case frameTypeHeaders:
		s.mu.Lock()
		if h.stream > s.last {
			s.last = h.stream
			s.open = append(s.open, h.stream)
			s.tc.rqs.Add(1)
		}
		s.mu.Unlock()
	case frameTypeRSTStream:
		s.mu.Lock()
		counted := s.endLocked(h.stream) && !s.over
		s.mu.Unlock()
		if counted {
			s.cs.UpstreamRqTxReset().Inc()
		}
	}
}

// inbound accounts for a frame the host sent.
func (s *h2StreamStats) inbound(h frameHead) {
	if s.cs == nil {
		return
	}
	switch h.typ {
	case frameTypeHeaders, frameTypeData:
		if h.flags&flagEndStream != 0 {
			s.end(h.stream)
		}
	case frameTypeRSTStream:
		if s.end(h.stream) && h.code != h2ErrRefusedStream {
			s.cs.UpstreamRqRxReset().Inc()
		}
	case frameTypeGoAway:
		s.mu.Lock()
		first := !s.goneAway
		s.goneAway = true
		s.mu.Unlock()
		if first {
			s.cs.UpstreamCxCloseNotify().Inc()
		}
	}
}

// end ends an open stream and reports whether it was open.
func (s *h2StreamStats) end(stream uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endLocked(stream)
}

// endLocked is end with s.mu held.
func (s *h2StreamStats) endLocked(stream uint32) bool {
	i, ok := slices.BinarySearch(s.open, stream)
	if ok {
		s.open = slices.Delete(s.open, i, i+1)
	}
	return ok
}

// ended records the connection's end (a failed read, or its close):
// with a stream still open, it closes with a request on it.
func (s *h2StreamStats) ended() {
	if s.cs == nil {
		return
	}
	s.mu.Lock()
	s.over = true
	n := len(s.open)
	s.mu.Unlock()
	if n > 0 {
		s.tc.withRq.Store(true)
	}
}
