// Package tcpstats is the tcp_stats transport socket
// (envoy.transport_sockets.tcp_stats): each connection's TCP_INFO, read
// when it closes and every update_period while it lasts, goes to Envoy's
// stats under <scope>tcp_stats. (a cluster's, cluster.<name>., or a
// listener's, listener.<address>.), as Envoy's TcpStatsSocket records
// them.
package tcpstats

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	tcpstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tcp_stats/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stats is a compiled tcp_stats transport socket (not the one it wraps).
type Stats struct {
	// period is update_period, 0 for none (only the close records).
	period time.Duration

	txSegments, rxSegments, txDataSegments, rxDataSegments *stats.Counter
	txRetransmitted, rxBytes, txBytes                      *stats.Counter
	txUnsent, txUnacked                                    *stats.Gauge
	txPercentRetransmitted, rtt, rttVariance               *stats.Histogram
}

// Compile reads the transport socket (not the one it wraps) with its stats
// in scope (the cluster's or the listener's). It fails where TCP_INFO
// cannot be read, as Envoy does off Linux.
func Compile(m *tcpstatsv3.Config, scope stats.Scope) (*Stats, error) {
	if err := tcpInfoSupported(); err != nil {
		return nil, err
	}
	s := &Stats{
		txSegments:             scope.Counter("tcp_stats.cx_tx_segments"),
		rxSegments:             scope.Counter("tcp_stats.cx_rx_segments"),
		txDataSegments:         scope.Counter("tcp_stats.cx_tx_data_segments"),
		rxDataSegments:         scope.Counter("tcp_stats.cx_rx_data_segments"),
		txRetransmitted:        scope.Counter("tcp_stats.cx_tx_retransmitted_segments"),
		rxBytes:                scope.Counter("tcp_stats.cx_rx_bytes_received"),
		txBytes:                scope.Counter("tcp_stats.cx_tx_bytes_sent"),
		txUnsent:               scope.Gauge("tcp_stats.cx_tx_unsent_bytes"),
		txUnacked:              scope.Gauge("tcp_stats.cx_tx_unacked_segments"),
		txPercentRetransmitted: scope.Histogram("tcp_stats.cx_tx_percent_retransmitted_segments", stats.UnitPercent),
		rtt:                    scope.Histogram("tcp_stats.cx_rtt_us", stats.UnitMicroseconds),
		rttVariance:            scope.Histogram("tcp_stats.cx_rtt_variance_us", stats.UnitMicroseconds),
	}
	if d := m.GetUpdatePeriod(); d != nil {
		s.period = d.AsDuration()
	}
	return s, nil
}

// tcpInfo is what the stats read of a connection's TCP_INFO.
type tcpInfo struct {
	segsOut, segsIn, dataSegsOut, dataSegsIn, totalRetrans uint32
	bytesReceived, bytesSent                               uint64
	notsentBytes, unacked                                  uint32
	rtt, rttVar                                            uint32
}

// Recorder records one connection's TCP_INFO: the counters take what
// grew since the last reading, the gauges follow the connection's values.
type Recorder struct {
	s    *Stats
	conn net.Conn // the TCP connection

	mu    sync.Mutex
	last  tcpInfo
	timer *time.Timer
	done  bool
}

// Watch starts recording the TCP_INFO of conn (every update_period), or
// of the TCP connection under its layers (TLS); nil when there is none (a
// pipe).
func (s *Stats) Watch(conn net.Conn) *Recorder {
	for {
		if _, ok := conn.(*net.TCPConn); ok {
			break
		}
		nc, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = nc.NetConn()
	}
	r := &Recorder{s: s, conn: conn}
	if s.period > 0 {
		r.mu.Lock()
		r.timer = time.AfterFunc(s.period, r.tick)
		r.mu.Unlock()
	}
	return r
}

// tick records and rearms the timer, until the connection closed.
func (r *Recorder) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.recordLocked()
	r.timer.Reset(r.s.period)
}

// Finish records the connection's last values, before it closes, and
// takes what it left in the gauges back out, as Envoy does. Only the
// first call counts.
func (r *Recorder) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.recordLocked()
	r.s.txUnsent.Add(-int64(r.last.notsentBytes))
	r.s.txUnacked.Add(-int64(r.last.unacked))
}

// recordLocked reads TCP_INFO and updates the stats as Envoy's
// recordStats: the retransmitted share of the data segments sent since
// the last reading, the counters' growth, the gauges' change, the RTT.
func (r *Recorder) recordLocked() {
	info, ok := readTCPInfo(r.conn)
	if !ok {
		return
	}
	s, last := r.s, &r.last
	if info.dataSegsOut > last.dataSegsOut && info.totalRetrans >= last.totalRetrans {
		out := uint64(info.dataSegsOut - last.dataSegsOut)
		re := uint64(info.totalRetrans - last.totalRetrans)
		s.txPercentRetransmitted.Record(re * stats.PercentScale / out)
	}
	grow := func(c *stats.Counter, last *uint32, cur uint32) {
		if cur > *last {
			c.Add(uint64(cur - *last))
		}
		*last = cur
	}
	grow(s.txSegments, &last.segsOut, info.segsOut)
	grow(s.rxSegments, &last.segsIn, info.segsIn)
	grow(s.txDataSegments, &last.dataSegsOut, info.dataSegsOut)
	grow(s.rxDataSegments, &last.dataSegsIn, info.dataSegsIn)
	grow(s.txRetransmitted, &last.totalRetrans, info.totalRetrans)
	if info.bytesReceived > last.bytesReceived {
		s.rxBytes.Add(info.bytesReceived - last.bytesReceived)
	}
	last.bytesReceived = info.bytesReceived
	if info.bytesSent > last.bytesSent {
		s.txBytes.Add(info.bytesSent - last.bytesSent)
	}
	last.bytesSent = info.bytesSent
	s.txUnsent.Add(int64(info.notsentBytes) - int64(last.notsentBytes))
	last.notsentBytes = info.notsentBytes
	s.txUnacked.Add(int64(info.unacked) - int64(last.unacked))
	last.unacked = info.unacked
	s.rtt.Record(uint64(info.rtt))
	s.rttVariance.Record(uint64(info.rttVar))
}

// Wrap implements the listener's connection wrapper: a downstream
// connection is recorded from its filter chain's start until it closes.
// The wrapper keeps NetConn, so that the proxy's fast paths still reach
// the socket (TCP_INFO counts what they move too).
func (s *Stats) Wrap(c net.Conn, _, _ net.Addr) net.Conn {
	r := s.Watch(c)
	if r == nil {
		return c
	}
	return &conn{Conn: c, r: r}
}

// conn is a downstream connection whose close records its TCP_INFO.
type conn struct {
	net.Conn
	r *Recorder
}

// Close implements net.Conn: the last reading, then the close.
func (c *conn) Close() error {
	c.r.Finish()
	return c.Conn.Close()
}

// CloseWrite half-closes the connection underneath, when it can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// NetConn is the connection underneath.
func (c *conn) NetConn() net.Conn { return c.Conn }

// ConnectionState is the state of the TLS session underneath (the zero
// value over plaintext).
func (c *conn) ConnectionState() tls.ConnectionState {
	if tc, ok := c.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}
