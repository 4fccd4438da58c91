package httpconn

import "time"

// refreshEvery is how stale a socket deadline may get before it is pushed
// back. Idle timeouts are coarse (minutes by default), so letting one fire
// up to a second early saves setting the socket's deadline on every
// request of a busy connection: it is set about once a second instead.
const refreshEvery = time.Second

// deadline remembers the deadline a socket has, so that arming the same
// limit for the next request is free when it barely moved. Deadlines are
// set on sockets, so the blocked read or write itself fails when one
// passes: no goroutine or timer per request.
type deadline struct {
	// at is the socket's deadline, zero for none; valid when set.
	at  time.Time
	set bool
}

// need reports whether the socket's deadline must become d, and records
// that it will. Unless exact, a deadline that is already no more than
// refreshEvery earlier than d is kept: it fires a little early, never late.
func (dl *deadline) need(d time.Time, exact bool) bool {
	if dl.set {
		if d.Equal(dl.at) {
			return false
		}
		if !exact && !d.IsZero() && !dl.at.IsZero() && !d.Before(dl.at) && d.Sub(dl.at) < refreshEvery {
			return false
		}
	}
	dl.at, dl.set = d, true
	return true
}

// forget makes the next need set the socket's deadline whatever it is
// believed to be (someone else changed it).
func (dl *deadline) forget() { dl.set = false }

// after returns now+d, or the zero time (no deadline) when d is 0.
func after(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// earliest returns the earlier of two deadlines, the zero time meaning
// none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// upstreamTimer times an upstream exchange: the route timeout is a hard
// limit, the stream idle timeout restarts with activity.
type upstreamTimer struct {
	hard time.Time
	idle time.Duration
	// at is the deadline set on the upstream connection.
	at time.Time
}

// deadline returns the connection deadline at now, and records it.
func (t *upstreamTimer) deadline(now time.Time) time.Time {
	t.at = earliest(t.hard, after(now, t.idle))
	return t.at
}

// stale reports whether the idle part is worth pushing back at now.
func (t *upstreamTimer) stale(now time.Time) bool {
	return t.idle > 0 && (t.hard.IsZero() || t.at.Before(t.hard)) && now.Add(t.idle).Sub(t.at) >= refreshEvery
}

// hardExpired reports whether the hard limit has passed at now: a deadline
// error then means the route timeout fired, not the idle one.
func (t *upstreamTimer) hardExpired(now time.Time) bool {
	return !t.hard.IsZero() && !now.Before(t.hard)
}
