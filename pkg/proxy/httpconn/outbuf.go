package httpconn

import (
	"io"
	"net"
)

// outBufSize is how much output is gathered before it is written: a
// response head and a small body leave in one write, and a large body
// goes out in pieces of this size or larger.
const outBufSize = 16 << 10

// gatherMax bounds an output buffer when a large piece joins what is
// gathered (see write), or when the short rest of a response body is read
// straight into the client's (see readRest): a 16 KiB body leaves with its
// head in one write.
const gatherMax = 32 << 10

// pairMin is the smallest last piece that writeLast sends from where it
// is, beside what is gathered, rather than copied behind it: below it the
// copy costs less than writev's second vector.
const pairMin = 2 << 10

// pairWriter writes the pieces of v in one system call (writev),
// counting them as its Write would.
type pairWriter interface {
	writePair(v *net.Buffers) (int64, error)
}

// outBuf gathers what goes to one peer so that a head and the start of its
// body leave in a single write. Large pieces bypass it once what is
// gathered has been flushed. The first write error sticks: every later
// write and flush returns it, and err tells a failed peer from a failed
// source when a copy stops.
type outBuf struct {
	w   io.Writer
	b   []byte
	err error
	// wrote tells that something went to w since reset: what is
	// gathered is then not all that was sent (see responseWait).
	wrote bool
	// pw, when set, is w writing two pieces in one system call (see
	// writeLast); vec and pair are its vector, kept so that a write
	// allocates nothing.
	pw   pairWriter
	vec  net.Buffers
	pair [2][]byte
}

// reset points the buffer at w and empties it.
func (o *outBuf) reset(w io.Writer) {
	o.w = w
	o.b = o.b[:0]
	o.err = nil
	o.wrote = false
	o.pw = nil
}

// write queues p, flushing first when p does not fit; a piece as large as
// the buffer goes straight out. A piece that fits within gatherMax behind
// what is gathered joins it instead: copying it costs less than a second
// write, and a response head with a 16 KiB body (which the proxy's own
// header fields make longer than the upstream's) leaves in one write.
func (o *outBuf) write(p []byte) error {
	n := len(o.b) + len(p)
	if o.err == nil && len(o.b) > 0 && n > outBufSize && n <= gatherMax {
		o.b = append(o.b, p...)
		return nil
	}
	if len(p) >= outBufSize && n > outBufSize {
		if o.flush() == nil {
			o.wrote = true
			_, o.err = o.w.Write(p)
		}
		return o.err
	}
	return queue(o, p)
}

// writeLast writes p, the last piece before a flush, with what is
// gathered. Where write would copy a large p behind the head (a 16 KiB
// response body read whole with its head), both leave from where they
// are, in one writev, when the writer can (pw): the copy was the one cost
// of a larger response body in user space.
func (o *outBuf) writeLast(p []byte) error {
	if o.pw == nil || len(p) < pairMin || len(o.b) == 0 || o.err != nil {
		return o.write(p)
	}
	o.pair = [2][]byte{o.b, p}
	o.vec = o.pair[:]
	o.wrote = true
	_, o.err = o.pw.writePair(&o.vec)
	// No reference to p is kept: it is the upstream's read buffer.
	o.pair, o.vec = [2][]byte{}, nil
	o.b = o.b[:0]
	return o.err
}

// writeString is write for a string, which is always queued: sending a
// large one straight out would mean copying it into a []byte.
func (o *outBuf) writeString(p string) error { return queue(o, p) }

// queue appends p to what is gathered, flushing that first when p does
// not fit.
func queue[T string | []byte](o *outBuf, p T) error {
	if o.err == nil && len(o.b)+len(p) > outBufSize {
		_ = o.flush()
	}
	if o.err != nil {
		return o.err
	}
	o.b = append(o.b, p...)
	return nil
}

// flush writes what is gathered.
func (o *outBuf) flush() error {
	if o.err != nil || len(o.b) == 0 {
		return o.err
	}
	o.wrote = true
	_, o.err = o.w.Write(o.b)
	o.b = o.b[:0]
	return o.err
}
