package httpconn

import (
	"strconv"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// A cluster's track_cluster_stats histograms (upstream.TrackedStats), as
// Envoy's router records them: per attempt when it ends (the per-try
// timeout budget, the request and response sizes), per request when its
// response completes or its route timeout fires (the timeout budget).
// A stream whose cluster tracks nothing pays one nil check per attempt.

// trackedTry is what those histograms need of the current attempt.
type trackedTry struct {
	// stats are the attempt's cluster's; nil when it tracks nothing.
	stats *upstream.TrackedStats
	// start is when the attempt began (timeout budgets only).
	start time.Time
	// respHead is the size of the attempt's response head, -1 before
	// one came (request and response sizes only).
	respHead int
}

// beginTracked starts the tracking of an attempt on a cluster with the
// histograms t (nil: none). It is small enough to be inlined: a cluster
// that tracks nothing pays a store and a nil check.
func (s *stream) beginTracked(t *upstream.TrackedStats) {
	s.track.stats = t
	if t != nil {
		s.startTracked(t)
	}
}

// startTracked is beginTracked on a cluster with histograms; kept out of
// line so that beginTracked stays within the inliner's budget.
//
//go:noinline
func (s *stream) startTracked(t *upstream.TrackedStats) {
	s.track.respHead = -1
	if t.TimeoutBudget != nil {
		s.track.start = time.Now()
	}
}

// trackedHead notes the size of the attempt's response head, as Envoy's
// upstream request notes it when the head reaches the router.
func (s *stream) trackedHead() {
	if t := s.track.stats; t != nil && t.Sizes != nil {
		s.track.respHead = s.respHeadSize()
	}
}

// endTracked records the attempt's histograms when it ends.
func (s *stream) endTracked() {
	t := s.track.stats
	if b := t.TimeoutBudget; b != nil {
		b.PerTryPercentUsed.Record(upstream.PercentOfTimeout(time.Since(s.track.start).Milliseconds(), s.retry.perTry.Milliseconds()))
	}
	if z := t.Sizes; z != nil {
		z.RqHeadersSize.Record(uint64(s.reqHeadSize()))
		z.RqBodySize.Record(s.bytesRecv)
		if s.track.respHead >= 0 {
			z.RsHeadersSize.Record(uint64(s.track.respHead))
			z.RsBodySize.Record(s.bytesSent)
		}
	}
}

// chargeTimeoutBudget records the share of the route timeout a request
// used until its response completed (used) on a cluster with the
// histograms of cs. It is small enough to be inlined: a cluster that
// tracks nothing pays a nil check.
func (s *stream) chargeTimeoutBudget(cs *upstream.ClusterStats, used time.Duration) {
	if t := cs.Tracked; t != nil && t.TimeoutBudget != nil {
		s.recordTimeoutBudget(t.TimeoutBudget, used)
	}
}

// recordTimeoutBudget is chargeTimeoutBudget on a cluster with the
// timeout budget histograms b.
func (s *stream) recordTimeoutBudget(b *upstream.TimeoutBudgetStats, used time.Duration) {
	b.PercentUsed.Record(upstream.PercentOfTimeout(used.Milliseconds(), s.rqTimeout.Milliseconds()))
}

// sinceRequestEnd is the time since the request ended downstream, from
// which the route timeout runs: its deadline tells when that was once
// armed, else the stream's last reading of the clock.
func (s *stream) sinceRequestEnd() time.Duration {
	if r := &s.retry; r.routeEndSet && s.rqTimeout > 0 {
		return s.rqTimeout - time.Until(r.routeEnd)
	}
	return time.Since(s.tLast)
}

// reqHeadSize is the size of the request head as it goes upstream, as
// Envoy's HeaderMap::byteSize counts it: the names and values of its
// fields, pseudo-headers and the framing headers included.
func (s *stream) reqHeadSize() int {
	n := len(":method") + len(s.method) + len(":path") + len(s.upPath) + len(":scheme") + len(s.scheme)
	if s.upAuthority != "" {
		n += len(":authority") + len(s.upAuthority)
	}
	n += fieldsSize(&s.reqHeaders)
	switch {
	case s.reqChunked:
		n += len("transfer-encoding") + len("chunked")
	case s.reqLength >= 0 && !s.reqHeaders.Has("content-length"):
		n += len("content-length") + len(strconv.FormatInt(s.reqLength, 10))
	}
	return n
}

// respHeadSize is the size of the response head from upstream, counted
// as reqHeadSize counts the request's.
func (s *stream) respHeadSize() int {
	n := len(":status") + 3 + fieldsSize(&s.respHeaders)
	if s.respLength >= 0 && s.respHasBody && !s.respHeaders.Has("content-length") {
		n += len("content-length") + len(strconv.FormatInt(s.respLength, 10))
	}
	return n
}

// fieldsSize is the bytes of h's names and values.
func fieldsSize(h *headerList) int {
	n := 0
	for i := range h.fields {
		n += len(h.fields[i].name) + len(h.fields[i].value)
	}
	return n
}
