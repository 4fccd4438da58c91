package tcpproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// earlyReader reads the downstream while the upstream connects
// (max_early_data_bytes, Envoy's receive_before_connect): what it reads
// waits in held until the upstream is there, and it stops reading once
// held reaches the limit, as Envoy read-disables the downstream then (so
// held is at most the limit plus one read).
type earlyReader struct {
	s     *session
	conn  net.Conn // the downstream as the pumps read it
	limit int

	// first is closed after the first read that returned bytes or
	// ended the stream.
	first     chan struct{}
	firstOnce sync.Once
	// gotBytes is set before first closes when bytes came.
	gotBytes bool
	done     chan struct{}

	// Set by the reading goroutine, read after done.
	held []byte
	// eof is the downstream's end of stream; err a failed read (not
	// the stop's deadline).
	eof bool
	err error
}

// startEarlyRead starts reading the downstream into held.
func (s *session) startEarlyRead(limit int) *earlyReader {
	e := &earlyReader{s: s, conn: rawConn(s.down), limit: limit, first: make(chan struct{}), done: make(chan struct{})}
	go e.run()
	return e
}

func (e *earlyReader) run() {
	defer close(e.done)
	defer e.firstOnce.Do(func() { close(e.first) })
	st := e.s.p.stats
	limit := uint32(0)
	if bl, ok := e.s.down.(interface{ BufferLimit() uint32 }); ok {
		limit = bl.BufferLimit()
	}
	buf, put := e.s.p.getBuf(limit)
	defer put()
	for {
		n, err := e.conn.Read(buf)
		if n > 0 {
			e.s.touch()
			e.s.heard(downSide, time.Since(e.s.mono))
			st.rxBytesTotal.Add(uint64(n))
			st.rxBuffered.Add(int64(n))
			st.earlyData.Inc()
			e.s.rx.Add(uint64(n))
			e.held = append(e.held, buf[:n]...)
			e.firstOnce.Do(func() {
				e.gotBytes = true
				close(e.first)
			})
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return // stopped
		case err == io.EOF:
			e.eof = true
			return
		case err != nil:
			e.err = err
			return
		}
		if len(e.held) >= e.limit {
			// Envoy read-disables the downstream here until the
			// upstream is connected.
			return
		}
	}
}

// waitFirst waits for the downstream's first bytes (upstream_connect_mode
// ON_DOWNSTREAM_DATA) and reports whether they came: false when the
// downstream ended or failed without sending any, or the proxy shut down.
func (e *earlyReader) waitFirst() bool {
	select {
	case <-e.first:
		return e.gotBytes
	case <-e.s.p.ctx.Done():
		return false
	}
}

// stop ends the reading (a read in progress is cut by a deadline) and
// returns what was read; the downstream reads normally afterwards.
func (e *earlyReader) stop() (held []byte, eof bool, err error) {
	_ = e.conn.SetReadDeadline(time.Unix(1, 0))
	<-e.done
	_ = e.conn.SetReadDeadline(time.Time{})
	if n := len(e.held); n > 0 {
		e.s.p.stats.rxBuffered.Add(-int64(n))
	}
	return e.held, e.eof, e.err
}
