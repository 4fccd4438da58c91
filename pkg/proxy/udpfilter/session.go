package udpfilter

import "google.golang.org/protobuf/proto"

// SessionCategory is Envoy's extension category of the UDP proxy's
// session filters (udp_proxy's session_filters).
const SessionCategory = "envoy.filters.udp.session"

// SessionFactory compiles a session filter's configuration (its
// typed_config message). Errors name the field path below typed_config.
type SessionFactory interface {
	CompileSession(config proto.Message) (SessionFilterConfig, error)
}

// SessionFilterConfig is a compiled session filter: it makes one filter
// per session.
type SessionFilterConfig interface {
	NewSessionFilter() SessionFilter
}

// SessionFilter sees the datagrams of one UDP proxy session, as Envoy's
// session read and write filters do. OnData runs on the datagrams from the
// client, in the order of session_filters; OnWrite on the bytes from the
// upstream host, in the reverse order (Envoy adds each write filter at the
// front of the list). OnData runs on the goroutine reading the listener
// socket the client's datagrams arrive on, OnWrite on the session's
// upstream reader: the two may run at once, so a filter keeps each
// direction's state apart.
type SessionFilter interface {
	// OnData transforms one datagram from the client before it is sent
	// upstream; ok false drops it (Envoy's StopIteration).
	OnData(b []byte) (out []byte, ok bool)
	// OnWrite takes one datagram from the host and returns the datagrams
	// to pass on toward the client: none, one or several (a filter may
	// keep bytes until it has a whole datagram). b is only valid during
	// the call; the datagrams returned may be kept by the caller.
	OnWrite(b []byte) [][]byte
}
