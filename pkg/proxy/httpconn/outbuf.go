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
	if o.err != nil {
		return o.err
	}
	if len(o.b)+len(p) <= outBufSize {
		o.b = append(o.b, p...)
		return nil
	}
	if err := o.flush(); err != nil {
		return err
	}
	if len(p) >= outBufSize {
		_, o.err = o.w.Write(p)
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

// writeString is write for a string.
func (o *outBuf) writeString(p string) error {
	if o.err != nil {
		return o.err
	}
	if len(o.b)+len(p) <= outBufSize {
		o.b = append(o.b, p...)
		return nil
	}
	if err := o.flush(); err != nil {
		return err
	}
	o.b = append(o.b, p...)
	return nil
}
