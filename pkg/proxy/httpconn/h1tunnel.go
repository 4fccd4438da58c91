package httpconn

import (
	"io"
	"time"
)

// h1BodySide is an HTTP/1 request and response as one side of a POST
// tunnel (allow_post): the request body, de-framed, is read; the response
// body, chunked, is written; its end is the half-close.
type h1BodySide struct {
	s *stream
	// rest is what the last Next returned that Read did not take yet.
	rest []byte
}

// Read implements io.Reader over the request body.
func (b *h1BodySide) Read(p []byte) (int, error) {
	if len(b.rest) == 0 {
		if b.s.body == nil || b.s.bodyDone {
			return 0, io.EOF
		}
		piece, err := b.s.body.Next()
		if err == io.EOF {
			b.s.requestEnded()
		}
		if len(piece) == 0 {
			return 0, err
		}
		b.rest = piece
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

// Write implements io.Writer: body bytes, sent at once.
func (b *h1BodySide) Write(p []byte) (int, error) {
	if err := b.s.down.writeBody(p); err != nil {
		return 0, err
	}
	if err := b.s.down.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetReadDeadline implements tunnelConn.
func (b *h1BodySide) SetReadDeadline(d time.Time) error { return b.s.conn.nc.SetReadDeadline(d) }

// SetWriteDeadline implements tunnelConn.
func (b *h1BodySide) SetWriteDeadline(d time.Time) error { return b.s.conn.nc.SetWriteDeadline(d) }

// CloseWrite ends the response body.
func (b *h1BodySide) CloseWrite() error { return b.s.down.finish() }

// Close closes the client's connection.
func (b *h1BodySide) Close() error { return b.s.conn.nc.Close() }
