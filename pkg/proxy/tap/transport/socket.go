// Package transport is the tap transport socket
// (envoy.transport_sockets.tap, envoy.extensions.transport_sockets.tap.v3.Tap):
// on a listener's filter chain or a cluster it records the bytes a
// connection reads and writes, as the proxy sees them (decrypted under
// TLS), in Envoy's socket trace form (envoy.data.tap.v3: a
// socket_buffered_trace when the connection closes, or with
// output_config.streaming its socket_streamed_trace_segment messages), to
// the sinks of the tap HTTP filter: the /tap admin session of its
// common_config.admin_config.config_id, or the file_per_tap sink of its
// static_config. It wraps another transport socket (raw_buffer or TLS),
// which its caller builds; this package only taps the plaintext side.
package transport

import (
	"errors"
	"net"
	"sync/atomic"

	tapsockv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
)

// Name is the transport socket's name in the proxy. spelling
// (envoy.transport_sockets.tap is accepted too).
const Name = "proxy.transport_sockets.tap"

// Socket is a compiled tap transport socket: either an admin config id
// and the registry holding its /tap session, or a static configuration;
// and the transport.tap.* counters of its owner's scope.
type Socket struct {
	reg    *tap.Registry
	id     string
	static *tap.Config
	// rt reads the runtime keys of tap_enabled.
	rt runtime.Reader
	// perEvent is socket_tap_config.set_connection_per_event: streamed
	// events carry the connection's addresses.
	perEvent bool
	// streamed and buffered are Envoy's streamed_submit and
	// buffered_submit: the segments and the buffered traces submitted.
	streamed, buffered *stats.Counter
	closed             atomic.Bool
}

// Compile compiles t's tap (not its transport_socket, which the caller
// builds); scope is the owner's stat scope (the listener's or the
// cluster's), where the counters are transport.tap.[<stats_prefix>.]*;
// rt reads the runtime keys of tap_enabled. An admin_config registers its
// config id with reg until Close. Errors name the field below t.
func Compile(t *tapsockv3.Tap, reg *tap.Registry, scope stats.Scope, rt runtime.Reader) (*Socket, error) {
	if t.GetTransportSocket() == nil {
		return nil, errors.New("transport_socket: required (the transport socket the tap wraps)")
	}
	prefix := "transport.tap."
	if p := t.GetSocketTapConfig().GetStatsPrefix(); p != "" {
		prefix += p + "."
	}
	sc := scope.Scope(prefix)
	s := &Socket{
		rt:       rt,
		perEvent: t.GetSocketTapConfig().GetSetConnectionPerEvent(),
		streamed: sc.Counter("streamed_submit"),
		buffered: sc.Counter("buffered_submit"),
	}
	cc := t.GetCommonConfig()
	switch {
	case cc.GetAdminConfig() != nil:
		id := cc.GetAdminConfig().GetConfigId()
		if id == "" {
			return nil, errors.New("common_config.admin_config.config_id: required")
		}
		if reg == nil {
			return nil, errors.New("common_config.admin_config: no admin tap registry in this server")
		}
		s.reg, s.id = reg, id
		reg.Register(id, tap.TransportSocket)
	case cc.GetStaticConfig() != nil:
		if err := checkStatic(cc.GetStaticConfig(), "common_config.static_config"); err != nil {
			return nil, err
		}
		c, err := tap.CompileStatic(cc.GetStaticConfig(), "common_config.static_config")
		if err != nil {
			return nil, err
		}
		s.static = c
	default:
		return nil, errors.New("common_config: admin_config or static_config is required")
	}
	return s, nil
}

// Close implements io.Closer: once its listener or cluster is gone, an
// admin tap's config id is no longer one /tap may attach to.
func (s *Socket) Close() error {
	if s.reg != nil && s.closed.CompareAndSwap(false, true) {
		s.reg.Unregister(s.id, tap.TransportSocket)
	}
	return nil
}

// Wrap returns c tapped when a configuration is active as the connection
// starts (the attached /tap session, or the static one), its tap_enabled
// share samples the connection and its match holds, else c itself: as in Envoy, a connection keeps the configuration
// it started with. local and remote are the connection's addresses as the
// proxy sees them (restored by listener filters downstream). The wrapper
// hides the socket under it, so that every byte is read and written
// through it (no splice, no raw writes).
func (s *Socket) Wrap(c net.Conn, local, remote net.Addr) net.Conn {
	cfg := s.static
	if s.reg != nil {
		if sess := s.reg.Active(s.id); sess != nil {
			cfg = sess.Config
		}
	}
	// A socket tap sees no HTTP: its match is decided once, on a new
	// connection, as Envoy's matchers are.
	if cfg == nil || !cfg.Sampled(s.rt) || !cfg.Match.Matches(&tap.Exchange{}) {
		return c
	}
	return &conn{Conn: c, t: newTracer(s, cfg, local, remote)}
}
