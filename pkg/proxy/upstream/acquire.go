package upstream

import "time"

// Acquire is what a request tells a cluster's HTTP/1.1 pool when it asks
// for a connection, so that the pool reads it from the request rather
// than looking for it through the request's context chain on every
// request (a request of the DEFAULT priority without a source would
// walk the whole chain to find nothing).
type Acquire struct {
	// High is set for a request of a route whose priority is HIGH: it,
	// and a connection opened for it, count against the cluster's HIGH
	// circuit breakers.
	High bool
	// Source is the source original_src chose for the request (the zero
	// Source: none). The request's context carries it too (WithSource),
	// for the dial of a new connection; the two must agree.
	Source Source
	// Deadline is when a request waiting for a connection gives up with
	// context.DeadlineExceeded (the zero time: no limit but the
	// context's).
	Deadline time.Time
	// Gone, when not nil, tells whether the request's client went away;
	// it is polled only while the request waits for a connection.
	Gone func() bool
	// Share names the share of the host's idle connections the request
	// takes from first, and its connection goes back to: requests of one
	// downstream connection name the same, those of others spread over
	// the shares, so that workers seldom wait on each other's pool lock.
	// Any value will do (it is reduced to the shares the pool has).
	Share uint32
}
