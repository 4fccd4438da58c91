package tcpproxy

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// upstreamBytes are the cluster's stats of the bytes the TCP proxy moves
// through an upstream connection's socket (upstream_cx_rx_bytes_total,
// upstream_cx_tx_bytes_total, upstream_cx_tx_bytes_buffered): the pumps
// read and write the socket beneath the cluster's connection, which
// counts only what goes through it. The zero value counts nothing.
type upstreamBytes struct {
	rx, tx     *stats.Counter
	txBuffered *stats.Gauge
	// conn hears that the upstream ended the connection, which its close
	// counts in upstream_cx_destroy_remote.
	conn byteCounted
}

// byteCounted is a cluster's upstream connection, which gives its
// cluster's byte stats to those who bypass it.
type byteCounted interface {
	ByteCounters() (rx, tx *stats.Counter)
	TxBufferedGauge() *stats.Gauge
	PeerEnded()
}

// upstreamBytesOf is the byte stats of conn's cluster, or none for a
// connection that does not have them.
func upstreamBytesOf(conn net.Conn) upstreamBytes {
	bc, ok := conn.(byteCounted)
	if !ok {
		return upstreamBytes{}
	}
	rx, tx := bc.ByteCounters()
	return upstreamBytes{rx: rx, tx: tx, txBuffered: bc.TxBufferedGauge(), conn: bc}
}

// read counts n bytes read from the upstream.
func (b upstreamBytes) read(n int) {
	if b.rx != nil && n > 0 {
		b.rx.Add(uint64(n))
	}
}

// written counts n bytes written to the upstream.
func (b upstreamBytes) written(n int) {
	if b.tx != nil && n > 0 {
		b.tx.Add(uint64(n))
	}
}

// buffer moves the bytes waiting to be written to the upstream by n.
func (b upstreamBytes) buffer(n int) {
	if b.txBuffered != nil && n != 0 {
		b.txBuffered.Add(int64(n))
	}
}

// readEnded tells the connection how a read of the upstream ended: err
// is nil or io.EOF for the end of its stream.
func (b upstreamBytes) readEnded(err error) {
	if b.conn != nil && (err == nil || err == io.EOF || errors.Is(err, syscall.ECONNRESET)) {
		b.conn.PeerEnded()
	}
}
