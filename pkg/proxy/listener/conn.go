package listener

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DefaultBufferLimit is a connection's buffer limit when the listener sets
// no per_connection_buffer_limit_bytes (Envoy's 1 MiB).
const DefaultBufferLimit = 1 << 20

// Conn is a downstream connection as a listener hands it to a filter
// chain. Closing it (once, from any goroutine) updates the listener's
// connection stats; handlers must close it through this value, never
// through NetConn.
type Conn struct {
	net.Conn

	owner       *Listener
	worker      *workerStats
	chain       string
	chainNamed  bool // chain is the configured name, not a path
	start       time.Time
	bufferLimit uint32
	closed      atomic.Bool
	// remote and local are the addresses the listener filters restored
	// (a PROXY protocol header's); nil leaves the socket's own.
	remote, local net.Addr
	// localRestored is set when local is an original destination a
	// listener filter restored.
	localRestored bool
	// source is the upstream source a listener filter (original_src)
	// set, hasSource whether one did.
	source    upstream.Source
	hasSource bool
	// metadata is the dynamic metadata the listener filters set
	// (netfilter.MetadataHolder), which read filters may add to
	// (netfilter.MetadataSetter). A value stored is never modified: an
	// addition stores a copy.
	metadata atomic.Pointer[corev3.Metadata]
	// pp is what the connection's PROXY protocol header said, hasPP
	// whether a listener filter parsed one.
	pp    upstream.ProxyProtocolData
	hasPP bool
	// serverName is the requested server name the listener filters
	// found (tls_inspector), else the one of the TLS handshake.
	serverName string
	// ja3 and ja4 are the tls_inspector's fingerprints of the ClientHello.
	ja3, ja4 string
	// tls is set once the chain's TLS handshake completed: Conn then
	// reads and writes through it.
	tls *tls.Conn
	// localCert is the certificate the TLS handshake served.
	localCert *x509.Certificate
	// peerValidated is set when the handshake validated the client's
	// certificate (tlsconfig.Handshaked).
	peerValidated bool
	// peerReset is set once a read found the connection reset by the
	// peer (see Close).
	peerReset atomic.Bool
	// ConnState is the connection's filter state (netfilter.FilterStater),
	// what its read filters leave for tcp_proxy and the clusters.
	netfilter.ConnState
	// hooks run at the first Close (OnClose); hookMu guards them
	// against it, and guards log.
	hookMu sync.Mutex
	hooks  []func()
	// log is the connection's record for the listener's access logs,
	// nil when the listener has none.
	log *connLog
}

// TLSLocalCertificate is the certificate the connection's TLS handshake
// served, nil when the connection is not TLS.
func (c *Conn) TLSLocalCertificate() *x509.Certificate { return c.localCert }

// PeerCertificateValidated reports whether the TLS handshake validated
// the client's certificate (Envoy's peerCertificateValidated: a
// validation context checked it and every check passed).
func (c *Conn) PeerCertificateValidated() bool { return c.peerValidated }

// TLSConnectionState returns the state of the connection's TLS session,
// and false when the connection is not TLS.
func (c *Conn) TLSConnectionState() (tls.ConnectionState, bool) {
	if c.tls == nil {
		return tls.ConnectionState{}, false
	}
	return c.tls.ConnectionState(), true
}

// RequestedServerName is the server name the client asked for (TLS SNI),
// or "".
func (c *Conn) RequestedServerName() string { return c.serverName }

// TLSFingerprints are the ClientHello's JA3 hash and JA4 fingerprint the
// tls_inspector computed, "" for those it did not.
func (c *Conn) TLSFingerprints() (ja3, ja4 string) { return c.ja3, c.ja4 }

// RemoteAddr is the connection's remote address: the one a listener
// filter restored, else the peer's.
func (c *Conn) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return c.Conn.RemoteAddr()
}

// DirectRemoteAddr is the socket's peer address, whatever a listener
// filter restored (RBAC's direct_remote_ip).
func (c *Conn) DirectRemoteAddr() net.Addr { return c.Conn.RemoteAddr() }

// LocalAddr is the connection's local address: the one a listener filter
// restored, else the socket's.
func (c *Conn) LocalAddr() net.Addr {
	if c.local != nil {
		return c.local
	}
	return c.Conn.LocalAddr()
}

// UpstreamSource is the source the connection's upstream connections
// leave from, which a listener filter (original_src) set; false when none
// did (upstream.SourceConn).
func (c *Conn) UpstreamSource() (upstream.Source, bool) { return c.source, c.hasSource }

// DynamicMetadata is the connection's dynamic metadata, which its listener
// filters and read filters set (netfilter.MetadataHolder); nil when they
// set none.
func (c *Conn) DynamicMetadata() *corev3.Metadata { return c.metadata.Load() }

// SetDynamicMetadata merges fields into namespace of the connection's
// dynamic metadata (netfilter.MetadataSetter: Envoy's connection
// StreamInfo::setDynamicMetadata, each field replacing the one of its
// name). It stores a merged copy, so that a reader holding the previous
// value sees it unchanged.
func (c *Conn) SetDynamicMetadata(namespace string, fields *structpb.Struct) {
	for {
		old := c.metadata.Load()
		next := &corev3.Metadata{FilterMetadata: maps.Clone(old.GetFilterMetadata()), TypedFilterMetadata: old.GetTypedFilterMetadata()}
		next = accesslog.MergeMetadata(next, namespace, fields)
		if c.metadata.CompareAndSwap(old, next) {
			return
		}
	}
}

// ProxyProtocol is what the connection's PROXY protocol header said
// (upstream.ProxyProtocolConn), false when no listener filter parsed one.
func (c *Conn) ProxyProtocol() (upstream.ProxyProtocolData, bool) { return c.pp, c.hasPP }

// LocalAddrRestored reports whether LocalAddr is an original destination
// a listener filter restored (Envoy's localAddressRestored), which an
// ORIGINAL_DST cluster connects to.
func (c *Conn) LocalAddrRestored() bool { return c.localRestored }

// Close closes the connection and, the first time, accounts for its end:
// downstream_cx_active goes down, downstream_cx_destroy up, and its
// lifetime goes to downstream_cx_length_ms.
func (c *Conn) Close() error {
	var err error
	if c.peerReset.Load() && c.tls != nil && c.Conn == net.Conn(c.tls) {
		// The close_notify alert crypto/tls would send first cannot reach
		// a peer that reset the connection: its write fails (and costs
		// a deadline timer, a system call and a formatted error). Close
		// the socket alone.
		err = c.tls.NetConn().Close()
	} else {
		err = c.Conn.Close()
	}
	if c.closed.CompareAndSwap(false, true) {
		c.owner.connClosed(c)
		c.hookMu.Lock()
		hooks := c.hooks
		c.hooks = nil
		c.hookMu.Unlock()
		for _, f := range hooks {
			f()
		}
	}
	return err
}

// Read reads from the connection, noting a reset by the peer for Close.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.tls != nil && errors.Is(err, syscall.ECONNRESET) {
		c.peerReset.Store(true)
	}
	return n, err
}

// OnClose arranges for f to run once the connection is closed, on the
// goroutine that closes it first, or at once when it is closed already
// (netfilter.Conn: the network filters that count connections).
func (c *Conn) OnClose(f func()) {
	c.hookMu.Lock()
	if !c.closed.Load() {
		c.hooks = append(c.hooks, f)
		c.hookMu.Unlock()
		return
	}
	c.hookMu.Unlock()
	f()
}

// StartTime is when the listener admitted the connection.
func (c *Conn) StartTime() time.Time { return c.start }

// CloseWrite shuts down the sending side of a TCP connection, so that a
// handler can close gracefully: the client sees the end of the stream
// while what it still sends is read (a lingering close).
func (c *Conn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errors.ErrUnsupported
	}
	return cw.CloseWrite()
}

// NetConn returns the connection under the Conn's accounting: the
// accepted socket, or on a TLS filter chain the TLS connection over it
// (whose own NetConn is the socket). Use the Conn for closing.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Listener returns the name of the listener that accepted the connection.
func (c *Conn) Listener() string { return c.owner.name }

// FilterChain returns the name of the filter chain serving the connection
// (the configured name, or its configuration path when it has none).
func (c *Conn) FilterChain() string { return c.chain }

// FilterChainName is the configured name of the filter chain serving the
// connection, "" when it has none (%FILTER_CHAIN_NAME%, as Envoy prints
// it).
func (c *Conn) FilterChainName() string {
	if c.chainNamed {
		return c.chain
	}
	return ""
}

// BufferLimit is the listener's per_connection_buffer_limit_bytes
// (DefaultBufferLimit when unset): how much a network filter should buffer
// for this connection in each direction before it stops reading.
func (c *Conn) BufferLimit() uint32 { return c.bufferLimit }
