//go:build !linux || tcpproxy_goroutines

package tcpproxy

// evloops has no event loop here: every connection takes the goroutine
// relay.
type evloops struct{}

func (*evloops) stop() {}

// relayOnLoop reports false: there is no event loop.
func (s *session) relayOnLoop(*handoff) bool { return false }
