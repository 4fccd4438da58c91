package httpconn

import "io"

// outBufSize is how much output is gathered before it is written: a
// response head and a small body leave in one write, and a large body
// goes out in pieces of this size or larger.
const outBufSize = 16 << 10

// gatherMax bounds an output buffer when a large piece joins what is
// gathered (see write), or when the short rest of a response body is read
// straight into the client's (see readRest): a 16 KiB body leaves with its
// head in one write.
const gatherMax = 32 << 10

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
}

// reset points the buffer at w and empties it.
func (o *outBuf) reset(w io.Writer) {
	o.w = w
	o.b = o.b[:0]
	o.err = nil
	o.wrote = false
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
