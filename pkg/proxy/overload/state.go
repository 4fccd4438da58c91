package overload

import "time"

// The Manager as the listeners consult it at accept time.

// AcceptState reports whether envoy.overload_actions.stop_accepting_connections
// is saturated, in which case listeners leave new connections in the
// kernel's accept queue, and returns a channel closed when that state
// next changes. Envoy pauses accepting only while the action is saturated,
// not while it scales.
func (m *Manager) AcceptState() (paused bool, changed <-chan struct{}) {
	s := m.accept.Load()
	return s.paused, s.changed
}

// RejectConnection reports whether envoy.overload_actions.reject_incoming_connections
// rejects a connection just accepted: true with a probability equal to
// the action's state (every connection while it is saturated). The
// listener then closes the connection at once and counts
// downstream_cx_overload_reject.
func (m *Manager) RejectConnection() bool { return m.draw(rejectIncomingConnections) }

// AcquireConnection counts a new downstream connection against the global
// limit (the downstream connections monitor's, else the runtime key
// overload.global_downstream_max_connections). With enforce false (a
// listener with ignore_global_conn_limit) it counts the connection without
// checking. It returns false, counting nothing, at the limit: the
// listener then closes the connection and counts
// downstream_global_cx_overflow. Every true must be matched by one
// ReleaseConnection when the connection ends.
func (m *Manager) AcquireConnection(enforce bool) bool { return m.conns.acquire(enforce) }

// ReleaseConnection ends the count of a connection AcquireConnection
// counted.
func (m *Manager) ReleaseConnection() { m.conns.release() }

// OpenConnections is the number of downstream connections counted now.
func (m *Manager) OpenConnections() int64 { return m.conns.open.Load() }

// The Manager as the HTTP connection manager consults it per request.

// StopAcceptingRequests reports whether envoy.overload_actions.stop_accepting_requests
// refuses a request whose headers were just decoded: true with a
// probability equal to the action's state (every request while it is
// saturated).
func (m *Manager) StopAcceptingRequests() bool { return m.draw(stopAcceptingRequests) }

// DisableKeepalive reports whether envoy.overload_actions.disable_http_keepalive
// closes the connection of the response being sent: true with a
// probability equal to the action's state (every response while it is
// saturated).
func (m *Manager) DisableKeepalive() bool { return m.draw(disableHTTPKeepalive) }

// ScaleIdleTimeout returns the effective value of a connection idle
// timeout d under envoy.overload_actions.reduce_timeouts
// (HTTP_DOWNSTREAM_CONNECTION_IDLE); see scaleTimer.
func (m *Manager) ScaleIdleTimeout(d time.Duration) time.Duration {
	return m.scaleTimer(timerConnectionIdle, d)
}

// ScaleStreamIdleTimeout returns the effective value of a stream idle
// timeout d under envoy.overload_actions.reduce_timeouts
// (HTTP_DOWNSTREAM_STREAM_IDLE); see scaleTimer.
func (m *Manager) ScaleStreamIdleTimeout(d time.Duration) time.Duration {
	return m.scaleTimer(timerStreamIdle, d)
}
