package cluster

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockio"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tcpstats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// trackedConn is an upstream connection as the cluster knows it: the
// network connection with the bookkeeping that counts its end exactly
// once, whoever closes it (a pool, the connection manager, the HTTP/2
// transport or Cluster.Close).
type trackedConn struct {
	net.Conn
	// sock reads and writes Conn's socket without entering the
	// scheduler when Conn is a plain *net.TCPConn (see sockio), nil
	// otherwise.
	sock   *sockio.Conn
	c      *Cluster
	host   *upstream.Host
	opened time.Time
	closed atomic.Bool
	// peerEnded is set once the host ended the connection (a read saw
	// the end of its stream or a reset): its close then counts in
	// upstream_cx_destroy_remote, else in upstream_cx_destroy_local.
	peerEnded atomic.Bool
	// withRq is set when the connection closes while a request on it has
	// not got its whole response (upstream_cx_destroy_with_active_rq).
	withRq atomic.Bool
	// rqs counts the requests the connection carried, recorded in
	// upstream_rq_per_cx when an HTTP connection (http set) closes.
	rqs  atomic.Uint32
	http bool
	// tcpPool marks the connections of ConnectHost (the TCP proxy's,
	// upgrades'): what Envoy's TCP connection pools hold, which
	// close_connections_on_host_health_failure closes (hostFailed).
	tcpPool atomic.Bool
	// tcpStats records the connection's TCP_INFO (the tcp_stats
	// transport socket), nil for none.
	tcpStats *tcpstats.Recorder
	// cx is the max_connections breaker the connection counts against
	// until it closes; nil for none.
	cx *resource
	// rq is the max_requests breaker of the HTTP/1.1 request the
	// connection is lent to (its route's priority's).
	rq *resource
	// pool is the HTTP/1.1 pool the connection was dialled for, nil for
	// other connections.
	pool *http1Pool
	// key is what the connection was made with on behalf of its first
	// request: the HTTP/1.1 pool lends it only to requests asking for the
	// same. keyed tells whether key is other than the zero (default)
	// one, so that a default request and a default connection match
	// without comparing keys.
	key   poolKey
	keyed bool
	// tlsInfo is what the access log shows of the connection's TLS, nil
	// for a plaintext one.
	tlsInfo *accesslog.TLSInfo

	// HTTP/1.1 only.
	//
	// up is what the pool lends; up.Conn is this trackedConn, which is how
	// a released *upstream.Conn leads back here.
	up upstream.Conn
	// inUse is set while the connection is lent, so that a second release
	// of the same connection cannot put it in the idle list twice.
	inUse atomic.Bool
	// draining is set once the connection's host failed its health (see
	// hostFailed): the connection closes when released, never lent again.
	draining atomic.Bool
	// idleSince is when the connection was last released (guarded by its
	// pool's lock).
	idleSince time.Time
	// lentAt is when the connection was last lent (written by the
	// borrower's AcquireHTTP1 only): the next loan skips the probe within
	// probeWindow of it.
	lentAt time.Time
	probe  prober
	// share is the idle share of its pool the connection goes back to
	// (written by the borrower's AcquireHTTP1 only: see http1Pool).
	share uint32
}

// poolKey is what a request may ask of the connection it gets, beyond
// the host: the server name and SAN of the handshake (auto_sni,
// auto_san_validation) and the source address and mark (original_src).
// Requests asking for nothing (the zero key) share connections.
type poolKey struct {
	tls tlsconfig.Override
	src upstream.Source
	// pp is the downstream side the connection's PROXY protocol header
	// described, on a cluster that sends one.
	pp upstream.ProxyProtocolData
}

// TLSInfo is what the access log shows of the connection's TLS
// (%UPSTREAM_TLS_VERSION%...), nil for a plaintext connection.
func (tc *trackedConn) TLSInfo() *accesslog.TLSInfo { return tc.tlsInfo }

// Close closes the connection and counts its end, once. It leaves the read
// buffer alone: whoever closes a lent connection may still be reading.
func (tc *trackedConn) Close() error {
	if !tc.closed.CompareAndSwap(false, true) {
		return nil
	}
	c := tc.c
	if tc.tcpStats != nil {
		// The last TCP_INFO, while the socket is still open.
		tc.tcpStats.Finish()
	}
	c.untrack(tc)
	c.stats.UpstreamCxActive.Dec()
	c.stats.UpstreamCxDestroy.Inc()
	remote := tc.peerEnded.Load()
	if remote {
		c.stats.UpstreamCxDestroyRemote.Inc()
	} else {
		c.stats.UpstreamCxDestroyLocal.Inc()
	}
	// An HTTP/1.1 connection closed while lent (its request cut short by
	// the connection manager, the cluster's shutdown) had a request on
	// it too.
	if tc.withRq.Load() || tc.inUse.Load() {
		c.stats.UpstreamCxDestroyWithActiveRq().Inc()
		if remote {
			c.stats.UpstreamCxDestroyRemoteWithActiveRq().Inc()
		} else {
			c.stats.UpstreamCxDestroyLocalWithActiveRq().Inc()
		}
	}
	if tc.http {
		c.stats.UpstreamRqPerCx.Record(uint64(tc.rqs.Load()))
	}
	c.stats.UpstreamCxLengthMs.Record(uint64(c.now().Sub(tc.opened).Milliseconds()))
	tc.host.Stats.CxActive.Add(-1)
	if tc.pool != nil {
		tc.pool.open.Add(-1)
	}
	if tc.cx != nil {
		c.releaseConnSlotOf(tc.cx, tc.pool)
	}
	return tc.Conn.Close()
}

// discard closes a connection that nobody else holds (released, or taken
// from the idle list) and recycles its read buffer.
func (tc *trackedConn) discard() {
	_ = tc.Close()
	if r := tc.up.R; r != nil {
		tc.up.R = nil
		tc.c.putReader(r)
	}
}

// Read reads from the connection and counts the bytes in
// upstream_cx_rx_bytes_total.
func (tc *trackedConn) Read(p []byte) (int, error) {
	var (
		n   int
		err error
	)
	if tc.sock != nil {
		n, err = tc.sock.Read(p)
	} else {
		n, err = tc.Conn.Read(p)
	}
	if n > 0 {
		tc.c.stats.UpstreamCxRxBytesTotal.Add(uint64(n))
	} else if err != nil && endedByPeer(err) {
		tc.peerEnded.Store(true)
	}
	return n, err
}

// endedByPeer reports whether a read's error says the peer ended the
// connection: the end of its stream, or a reset.
func endedByPeer(err error) bool {
	return err == io.EOF || errors.Is(err, syscall.ECONNRESET)
}

// PeerEnded records that the host ended the connection, for whoever
// reads it through NetConn's socket (the TCP proxy) and saw the end of
// its stream or a reset there.
func (tc *trackedConn) PeerEnded() { tc.peerEnded.Store(true) }

// Write writes to the connection and counts the bytes in
// upstream_cx_tx_bytes_total.
func (tc *trackedConn) Write(p []byte) (int, error) {
	var (
		n   int
		err error
	)
	if tc.sock != nil {
		n, err = tc.sock.Write(p)
	} else {
		n, err = tc.Conn.Write(p)
	}
	if n > 0 {
		tc.c.stats.UpstreamCxTxBytesTotal.Add(uint64(n))
	}
	return n, err
}

// ReadFrom keeps the underlying connection's fast path (splice on Linux
// TCP) for request bodies copied into the upstream.
func (tc *trackedConn) ReadFrom(r io.Reader) (n int64, err error) {
	if rf, ok := tc.Conn.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(tc.Conn, r)
	}
	if n > 0 {
		tc.c.stats.UpstreamCxTxBytesTotal.Add(uint64(n))
	}
	return n, err
}

// ByteCounters are the cluster's upstream_cx_rx_bytes_total and
// upstream_cx_tx_bytes_total, for whoever moves the connection's bytes
// through NetConn's socket (the TCP proxy, a spliced response body) and
// so must count them itself.
func (tc *trackedConn) ByteCounters() (rx, tx *stats.Counter) {
	return tc.c.stats.UpstreamCxRxBytesTotal, tc.c.stats.UpstreamCxTxBytesTotal
}

// TxBufferedGauge is the cluster's upstream_cx_tx_bytes_buffered, for
// whoever holds bytes for the connection before writing them to its
// socket (the TCP proxy).
func (tc *trackedConn) TxBufferedGauge() *stats.Gauge {
	return tc.c.stats.UpstreamCxTxBytesBuffered
}

// CloseWrite shuts down the sending side of the connection (a TCP
// half-close), for the TCP proxy, which forwards a peer's FIN.
func (tc *trackedConn) CloseWrite() error {
	if cw, ok := tc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// NetConn returns the dialed connection itself, for socket-level I/O;
// closing must still go through the trackedConn so that it is counted.
func (tc *trackedConn) NetConn() net.Conn { return tc.Conn }
