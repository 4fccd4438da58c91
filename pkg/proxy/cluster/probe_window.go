package cluster

import "time"

// probeWindow is how recently a connection must have been lent for its
// next loan to skip the liveness probe (a system call per request, a few
// per cent of the proxy's CPU under load).
//
// It is measured from the previous loan, not from the release: the
// upstream's keep-alive timer starts when it has sent its response, which
// is after our request went out, which is after the loan. So a connection
// lent less than probeWindow ago has been idle on the upstream's side for
// less than probeWindow too, and no keep-alive timeout longer than that
// can have closed it. Measuring from the release would not bound it: a
// large response read at a slow client's pace is released long after the
// upstream finished sending it and started counting.
//
// 100 ms is an order of magnitude under the shortest keep-alive timeouts
// in common use (1 to 2 s; Node.js and Apache default to 5 s, nginx to
// 75 s), and long enough that a connection busy with a request every few
// milliseconds, the only case where the probe's cost shows, is never
// probed. What the window lets through is an upstream closing for another
// reason (a crash, a restart, a request limit reached without
// "Connection: close") or sending bytes unasked (they would be read as the
// next response) within the window: the probe narrowed that race but never
// closed it, as the upstream may do so right after the probe too.
// The connection manager sends a request without a body again, on a new
// connection, when a reused connection (Conn.Requests > 1) ends before
// answering anything; a request with a body fails with 503, as it could
// before.
const probeWindow = 100 * time.Millisecond

// probeDue reports whether a connection last lent at lentAt must be probed
// before being lent again at now. A clock that went backwards (only an
// injected one can) gets the probe.
func probeDue(lentAt, now time.Time) bool {
	d := now.Sub(lentAt)
	return d < 0 || d >= probeWindow
}
