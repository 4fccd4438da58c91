package httpconn

import "io"

// outBufSize is how much output is gathered before it is written: a
// response head and a small body leave in one write, and a large body
// goes out in pieces of this size or larger.
const outBufSize = 16 << 10

// outBuf gathers what goes to one peer so that a head and the start of its
// body leave in a single write. Large pieces bypass it once what is
// gathered has been flushed. The first write error sticks: every later
// write and flush returns it, and err tells a failed peer from a failed
// source when a copy stops.
type outBuf struct {
	w   io.Writer
	b   []byte
	err error
}

// reset points the buffer at w and empties it.
func (o *outBuf) reset(w io.Writer) {
	o.w = w
	o.b = o.b[:0]
	o.err = nil
}

// write queues p, flushing first when p does not fit; a piece as large as
// the buffer goes straight out.
func (o *outBuf) write(p []byte) error {
	if len(p) >= outBufSize && len(o.b)+len(p) > outBufSize {
		if o.flush() == nil {
			_, o.err = o.w.Write(p)
		}
		return o.err
	}
	return queue(o, p)
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
	_, o.err = o.w.Write(o.b)
	o.b = o.b[:0]
	return o.err
}
