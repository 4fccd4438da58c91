package httpconn

import "time"

// writeTimeout names the timeout that ended a write waiting on an HTTP/2
// client's flow control.
type writeTimeout uint8

const (
	// writeNotTimedOut: no write timed out.
	writeNotTimedOut writeTimeout = iota
	// writeIdleTimeout: the stream idle timeout, while the response was
	// still coming.
	writeIdleTimeout
	// writeFlushTimeout: the flush timeout (stream_flush_timeout or the
	// route's flush_timeout), once the whole response had been produced.
	writeFlushTimeout
)

// flushTimeout is how long the stream may wait on the client's flow
// control once its whole response has been produced, as Envoy's
// setFlushTimeout: the route's flush_timeout, else stream_flush_timeout,
// else the route's idle_timeout, else stream_idle_timeout (unscaled:
// Envoy hands the codec the configured value). 0 disables it.
func (s *stream) flushTimeout() time.Duration {
	if s.route != nil {
		if d, ok := s.route.FlushTimeout(); ok {
			return d
		}
	}
	if s.m.cfg.streamFlushTimeoutSet {
		return s.m.cfg.streamFlushTimeout
	}
	if s.route != nil {
		if d, ok := s.route.IdleTimeout(); ok {
			return d
		}
	}
	return s.m.cfg.streamIdleTimeout
}
