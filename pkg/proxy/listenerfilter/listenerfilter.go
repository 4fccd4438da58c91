// Package listenerfilter is the listener filter interface, in the style of
// Envoy's: listener filters run on a new connection before its filter chain
// is chosen, in their configured order. They may look at the first bytes
// the client sends (peeking, without reading them), consume a header that
// belongs to them (the PROXY protocol's), and replace the connection's
// remote and local addresses, which the filter chain match and everything
// after it then see. Listener filters are extensions of the category
// envoy.filters.listener; each compiles its configuration once, with a
// Factory, into a Filter the listener runs for every connection.
package listenerfilter

import (
	"errors"
	"io"
	"net"
	"os"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Category is Envoy's extension category of listener filters.
const Category = "envoy.filters.listener"

// Factory compiles a listener filter's configuration (its typed_config
// message). Errors name the field path below typed_config.
type Factory interface {
	Compile(config proto.Message, ctx Context) (Filter, error)
}

// Context is what listener filters get from the server.
type Context struct {
	// Stats is the server's stat store.
	Stats *stats.Store
	// Log is the filter's component logger.
	Log logr.Logger
	// Runtime reads runtime feature flags (runtime_enabled); nil reads
	// no runtime.
	Runtime runtime.BoolReader
	// Now is the clock of the filters' token buckets; nil means
	// time.Now.
	Now func() time.Time
}

// Filter is a compiled listener filter.
type Filter interface {
	// OnAccept inspects a new connection on its own goroutine and returns
	// nil to let it go on to the next listener filter (and then to its
	// filter chain). Any other error closes the connection: the errors of
	// the Socket's reads are returned as they are (the listener counts
	// them), and a filter that refuses the connection returns
	// ErrRejected (after counting it in its own stats).
	OnAccept(s *Socket) error
}

// ErrRejected is what a filter returns when it closes a connection itself
// (a malformed header, a refused version).
var ErrRejected = errors.New("connection rejected by a listener filter")

// ReadError is a failure to read from the socket other than the peer's
// close (which is io.EOF) or the listener filters' timeout (which is
// os.ErrDeadlineExceeded): downstream_listener_filter_error.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "listener filter read: " + e.Err.Error() }

// Unwrap returns the socket's error.
func (e *ReadError) Unwrap() error { return e.Err }

// Socket is a connection while the listener filters run: its accepted
// socket and the addresses the filters have set so far.
type Socket struct {
	conn          net.Conn
	remote, local net.Addr
	// restored records that a filter replaced an address, so that the
	// connection carries the new ones; localRestored that the local one
	// was (an original destination).
	restored, localRestored bool
	// transport, serverName and appProtos are what an inspecting filter
	// (tls_inspector) detected: the transport protocol ("tls"), the
	// requested server name and the protocols offered with ALPN.
	transport, serverName string
	appProtos             []string
	// ja3 and ja4 are the ClientHello's fingerprints (tls_inspector's
	// enable_ja3_fingerprinting and enable_ja4_fingerprinting).
	ja3, ja4 string
	// source is the upstream source a filter (original_src) chose,
	// hasSource whether one did.
	source    upstream.Source
	hasSource bool
	// metadata is the connection's dynamic metadata (SetDynamicMetadata).
	metadata *corev3.Metadata
	// pp is what a PROXY protocol header said, hasPP whether one was
	// parsed (SetProxyProtocol).
	pp    upstream.ProxyProtocolData
	hasPP bool
	// accepted is when the listener accepted the connection, kept for
	// its access logs (zero when it has none).
	accepted time.Time
}

// SetAcceptTime records when the listener accepted the connection.
func (s *Socket) SetAcceptTime(t time.Time) { s.accepted = t }

// AcceptTime is when the listener accepted the connection, zero when it
// did not record it.
func (s *Socket) AcceptTime() time.Time { return s.accepted }

// NewSocket wraps a connection just accepted for its listener filters.
// An internal listener's connection starts with the metadata its
// upstream side passed on (see PassthroughMetadata).
func NewSocket(c net.Conn) *Socket {
	return &Socket{conn: c, remote: c.RemoteAddr(), local: c.LocalAddr(), metadata: PassthroughMetadata(c)}
}

// PassthroughMetadata is the metadata the upstream side of an internal
// listener's connection passed on (the internal_upstream transport
// socket's passthrough_metadata), nil for any other connection.
func PassthroughMetadata(c net.Conn) *corev3.Metadata {
	if p, ok := c.(interface{ PassthroughMetadata() *corev3.Metadata }); ok {
		return p.PassthroughMetadata()
	}
	return nil
}

// RemoteAddr is the connection's remote address as the filters have left
// it (the peer's, until a filter restores another).
func (s *Socket) RemoteAddr() net.Addr { return s.remote }

// LocalAddr is the connection's local address as the filters have left
// it.
func (s *Socket) LocalAddr() net.Addr { return s.local }

// SetRemoteAddr replaces the connection's remote address (the client's,
// from a PROXY protocol header).
func (s *Socket) SetRemoteAddr(a net.Addr) { s.remote, s.restored = a, true }

// SetLocalAddr replaces the connection's local address (the original
// destination).
func (s *Socket) SetLocalAddr(a net.Addr) { s.local, s.restored, s.localRestored = a, true, true }

// SetDetectedTransportProtocol records the connection's transport
// protocol ("tls"), which filter_chain_match.transport_protocol matches.
func (s *Socket) SetDetectedTransportProtocol(p string) { s.transport = p }

// DetectedTransportProtocol is the transport protocol a filter detected,
// or "" when none did.
func (s *Socket) DetectedTransportProtocol() string { return s.transport }

// SetRequestedServerName records the server name the client asked for
// (TLS SNI).
func (s *Socket) SetRequestedServerName(n string) { s.serverName = n }

// RequestedServerName is the server name a filter found, or "".
func (s *Socket) RequestedServerName() string { return s.serverName }

// SetTLSFingerprints records the ClientHello's JA3 hash and JA4
// fingerprint ("" for one not computed), for %TLS_JA3_FINGERPRINT% and
// %TLS_JA4_FINGERPRINT%.
func (s *Socket) SetTLSFingerprints(ja3, ja4 string) { s.ja3, s.ja4 = ja3, ja4 }

// TLSFingerprints are the fingerprints a filter recorded.
func (s *Socket) TLSFingerprints() (ja3, ja4 string) { return s.ja3, s.ja4 }

// SetApplicationProtocols records the protocols the client offers
// (ALPN).
func (s *Socket) SetApplicationProtocols(p []string) { s.appProtos = p }

// ApplicationProtocols are the protocols a filter found the client
// offering.
func (s *Socket) ApplicationProtocols() []string { return s.appProtos }

// SetUpstreamSource makes the connection's upstream connections leave from
// src (original_src): tcp_proxy's, and those of the requests the
// connection carries.
func (s *Socket) SetUpstreamSource(src upstream.Source) { s.source, s.hasSource = src, true }

// UpstreamSource is the upstream source a filter set, false when none
// did.
func (s *Socket) UpstreamSource() (upstream.Source, bool) { return s.source, s.hasSource }

// Restored reports whether a filter replaced an address.
func (s *Socket) Restored() bool { return s.restored }

// LocalRestored reports whether a filter replaced the local address: the
// connection then has an original destination (an ORIGINAL_DST cluster's
// host, a use_original_dst listener's hand-off).
func (s *Socket) LocalRestored() bool { return s.localRestored }

// NetConn is the accepted connection, for socket options.
func (s *Socket) NetConn() net.Conn { return s.conn }

// Discard reads and drops n bytes a filter peeked at and consumes (its
// header), so that the next reader starts after them. It reads exactly n
// bytes: nothing is buffered ahead.
func (s *Socket) Discard(n int) error {
	var buf [512]byte
	for n > 0 {
		got, err := s.conn.Read(buf[:min(n, len(buf))])
		n -= got
		if err != nil && n > 0 {
			return readError(err)
		}
	}
	return nil
}

// readError classifies a read failure: the peer's close and the timeout
// stay as they are, anything else becomes a *ReadError.
func readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	var re *ReadError
	if errors.As(err, &re) {
		return err
	}
	return &ReadError{Err: err}
}
