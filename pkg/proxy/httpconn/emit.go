package httpconn

import (
	"errors"
	"net/http"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// errEmitClosed is what an EmittingEncoder's emit gives once the stream
// has ended.
var errEmitClosed = errors.New("response body emitted after the stream ended")

// emitState is the lock an httpfilter.EmittingEncoder's writes share with
// the connection manager's: its emit runs on a goroutine of the
// encoder's, the router writes from the stream's.
type emitState struct {
	mu sync.Mutex
	// closed: the stream ended; emit writes nothing more.
	closed bool
	// sent is what emit wrote to the client, folded into the stream's
	// bytesSent by the stream's goroutine (take).
	sent uint64
}

// take returns the bytes emitted since the last call; em.mu is held.
func (em *emitState) take() uint64 {
	n := em.sent
	em.sent = 0
	return n
}

// startEmitters gives each EmittingEncoder its emitter.
func (d *encodingDown) startEmitters() {
	for i, e := range d.encs {
		ee, ok := e.(httpfilter.EmittingEncoder)
		if !ok {
			continue
		}
		if d.em == nil {
			d.em = &emitState{}
		}
		em := d.em
		ee.SetEmitter(func(p []byte) error {
			em.mu.Lock()
			defer em.mu.Unlock()
			if em.closed {
				return errEmitClosed
			}
			return d.emitFrom(i, p)
		})
	}
}

// emitFrom sends p, emitted by encoder i, through the encoders after it
// and to the client at once; d.em.mu is held. An empty p sends a head
// the encoder held (httpfilter.HeadHolder) without body bytes.
func (d *encodingDown) emitFrom(i int, p []byte) error {
	out, err := d.runRange(i+1, len(d.encs), p, false)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		if len(p) > 0 || !d.held {
			return nil
		}
		if err := d.release(-1); err != nil {
			return err
		}
		return d.inner.flush()
	}
	if err := d.release(-1); err != nil {
		return err
	}
	if err := d.writeInner(out); err != nil {
		return err
	}
	d.em.sent += uint64(len(out))
	return d.inner.flush()
}

// encodeData gives p to encoder e. An EmittingEncoder's EncodeData may
// wait for the processor it sends to, which may wait for its emitted
// pieces to leave: the lock is released for it.
func (d *encodingDown) encodeData(e httpfilter.DataEncoder, p []byte) ([]byte, error) {
	if _, ok := e.(httpfilter.EmittingEncoder); ok && d.em != nil {
		d.em.mu.Unlock()
		defer d.em.mu.Lock()
	}
	return e.EncodeData(p)
}

// encodeEnd ends encoder e. An EmittingEncoder's end waits for its last
// pieces, which it emits meanwhile: the lock is released for it.
func (d *encodingDown) encodeEnd(e httpfilter.DataEncoder) ([]byte, http.Header, error) {
	if _, ok := e.(httpfilter.EmittingEncoder); ok && d.em != nil {
		d.em.mu.Unlock()
		defer d.em.mu.Lock()
	}
	return e.EncodeEnd(d.trailer)
}
