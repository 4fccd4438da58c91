package httpconn

import "time"

// idleTimeout is the connection idle timeout in force: the configured one,
// scaled down while the overload manager's reduce_timeouts action is
// active. It is read each time the timer is armed.
func (m *Manager) idleTimeout() time.Duration {
	if o := m.deps.Overload; o != nil {
		return o.ScaleIdleTimeout(m.cfg.idleTimeout)
	}
	return m.cfg.idleTimeout
}

// scaleStreamIdle scales a stream idle timeout d (the connection
// manager's or a route's) by reduce_timeouts.
func (m *Manager) scaleStreamIdle(d time.Duration) time.Duration {
	if o := m.deps.Overload; o != nil {
		return o.ScaleStreamIdleTimeout(d)
	}
	return d
}
