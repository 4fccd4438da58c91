package httpconn

import "time"

// refreshEvery is how stale a socket deadline may get before it is pushed
// back. Idle timeouts are coarse (minutes by default), so letting one fire
// up to a second early saves setting the socket's deadline on every
// request of a busy connection: it is set about once a second instead.
const refreshEvery = time.Second

// slackOf is how early a lazily kept deadline of an idle timeout t may
// fire: a twentieth of t (5%), and never more than refreshEvery. A short
// timeout (a 2 s stream idle timeout fires at most 100 ms early) thus
// stays close to its setting, and a busy connection still moves its
// deadline at most about twenty times per timeout period, whatever its
// request rate.
func slackOf(t time.Duration) time.Duration {
	return min(t/20, refreshEvery)
}

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
	if exact {
		return dl.needWithin(d, 0)
	}
	return dl.needWithin(d, refreshEvery)
}

// needWithin is need with the slack given: a deadline that is already less
// than slack earlier than d is kept, so it fires at most slack early and
// never late. A slack of 0 is exact; slackOf gives the slack of an idle
// timeout.
func (dl *deadline) needWithin(d time.Time, slack time.Duration) bool {
	if dl.set {
		if d.Equal(dl.at) {
			return false
		}
		if slack > 0 && !d.IsZero() && !dl.at.IsZero() && !d.Before(dl.at) && d.Sub(dl.at) < slack {
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

// shorterTimeout returns the shorter of two timeouts, 0 meaning none (as
// after reads it): the one that fires first when both start together.
func shorterTimeout(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0 || a < b:
		return a
	}
	return b
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
// limit, and so are the stream's maximum durations (limit); the stream
// idle timeout restarts with activity.
type upstreamTimer struct {
	hard  time.Time
	limit time.Time
	// perTry is the attempt's per_try_timeout deadline (zero: none);
	// idleTry says that idle is the attempt's per_try_idle_timeout
	// rather than the stream idle timeout.
	perTry  time.Time
	idleTry bool
	idle    time.Duration
	// at is the deadline set on the upstream connection.
	at time.Time
}

// deadline returns the connection deadline at now, and records it.
func (t *upstreamTimer) deadline(now time.Time) time.Time {
	t.at = earliest(t.cap(), after(now, t.idle))
	return t.at
}

// stale reports whether the idle part is worth pushing back at now: when
// the deadline set would otherwise fire more than slackOf(idle) early.
func (t *upstreamTimer) stale(now time.Time) bool {
	hard := t.cap()
	return t.idle > 0 && (hard.IsZero() || t.at.Before(hard)) && now.Add(t.idle).Sub(t.at) >= slackOf(t.idle)
}

// cap is the earlier of the hard limits.
func (t *upstreamTimer) cap() time.Time { return earliest(earliest(t.hard, t.limit), t.perTry) }

// hardExpired reports whether the hard limit has passed at now: a deadline
// error then means the route timeout fired, not the idle one.
func (t *upstreamTimer) hardExpired(now time.Time) bool {
	return !t.hard.IsZero() && !now.Before(t.hard)
}
