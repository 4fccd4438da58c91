package httpconn

import (
	"errors"
	"io"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// retryBody is the request body of a request that may be retried: the
// pieces read from the client are kept, up to the connection's buffer
// limit, so that another attempt can send them again (Envoy buffers the
// body for retries the same way). Past the limit, retries are given up.
type retryBody struct {
	src bodySource
	buf []byte
	// pos is how much of buf the current attempt has read.
	pos   int
	limit int
	// done: src reached its end (set by the reader, which may be an
	// HTTP/2 transport's goroutine); over: the body outgrew the limit.
	done atomic.Bool
	over bool
	// abandoned is the cluster's retry_or_shadow_abandoned.
	abandoned *upstream.ClusterStats
}

// Next returns the kept pieces first, then the client's.
func (b *retryBody) Next() ([]byte, error) {
	if b.pos < len(b.buf) {
		p := b.buf[b.pos:]
		b.pos = len(b.buf)
		return p, nil
	}
	if b.done.Load() {
		return nil, io.EOF
	}
	p, err := b.src.Next()
	if !b.over {
		if len(b.buf)+len(p) > b.limit {
			// Too big to keep: this request is not retried.
			b.over, b.buf = true, nil
			b.abandoned.RetryOrShadowAbandoned().Inc()
		} else {
			b.buf = append(b.buf, p...)
		}
		b.pos = len(b.buf)
	}
	if errors.Is(err, io.EOF) {
		b.done.Store(true)
	}
	return p, err
}

// rewind makes the next attempt read the body from its start.
func (b *retryBody) rewind() { b.pos = 0 }
