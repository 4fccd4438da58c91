package compression

import (
	"errors"
	"io"
)

// readBuffer is how much the decoding goroutine reads at a time by
// default.
const readBuffer = 16 << 10

// maxPieceOutput bounds what one call may return, whatever the ratio
// allows: a piece that decodes to more is cut as a bomb is.
const maxPieceOutput = 16 << 20

// errReleased ends the decoding goroutine of a released decompressor.
var errReleased = errors.New("decompressor released")

// ReaderDecompressor adapts a pull decoder (Go's decompressors read the
// compressed stream from an io.Reader) to the push form of Decompressor:
// a goroutine per body runs the decoder, fed piece by piece. It hands
// control back once the decoder asks for more input, so only one side
// runs at a time and the output of a piece is bounded: at most
// MaxRatio × the piece's length (Envoy's max_inflate_ratio), after which
// the stream is cut and counted.
type ReaderDecompressor struct {
	// NewReader opens the decoder over the compressed stream.
	NewReader func(io.Reader) (io.Reader, error)
	// MaxRatio bounds each piece's output (0: no bound).
	MaxRatio uint64
	// ChunkSize is the decoder's output buffer (chunk_size); 0 takes
	// readBuffer.
	ChunkSize int
	// OnError counts a broken stream; OnRatio one cut for inflating too
	// much.
	OnError func(error)
	OnRatio func()
	// OnTrailing, when set, counts input that came after the end of the
	// compressed stream (dropped).
	OnTrailing func()

	started, broken bool
	// ended: the stream ended where its format says (set by the
	// goroutine before it closes done).
	ended  bool
	in     chan []byte
	hungry chan struct{}
	done   chan struct{}
	quit   chan struct{}
	cur    []byte
	closed bool
	out    []byte
	// limit bounds the output of the call in progress (0: none);
	// totalIn and totalOut count the body so far.
	limit             uint64
	totalIn, totalOut uint64
}

// allowance is how much the call in progress may return: the body's
// output may reach MaxRatio times its input so far (Envoy's
// max_inflate_ratio, counted over the body, so that a piece that
// completes what earlier ones began is not taken for a bomb), and one
// call at most maxPieceOutput.
func (d *ReaderDecompressor) allowance() uint64 {
	if d.MaxRatio == 0 {
		return maxPieceOutput
	}
	allowed := d.MaxRatio*d.totalIn - min(d.totalOut, d.MaxRatio*d.totalIn)
	return min(allowed, maxPieceOutput)
}

// Decompress implements Decompressor.
func (d *ReaderDecompressor) Decompress(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	if d.broken {
		d.trailing()
		return nil
	}
	if !d.started {
		d.start()
	}
	d.out = d.out[:0]
	d.totalIn += uint64(len(p))
	d.limit = d.allowance()
	select {
	case d.in <- p:
	case <-d.done:
		d.broken = true
		d.trailing()
		return d.out
	}
	select {
	case <-d.hungry:
	case <-d.done:
		d.broken = true
	}
	d.totalOut += uint64(len(d.out))
	return d.out
}

// Finish implements Decompressor.
func (d *ReaderDecompressor) Finish() []byte {
	if !d.started || d.broken {
		return nil
	}
	d.out = d.out[:0]
	d.limit = d.allowance()
	close(d.in)
	<-d.done
	d.broken = true
	return d.out
}

// Release implements Decompressor: the goroutine, if still running,
// ends.
func (d *ReaderDecompressor) Release() {
	if d.started {
		close(d.quit)
		d.started = false
		d.broken = true
	}
}

// start runs the decoding goroutine.
func (d *ReaderDecompressor) start() {
	d.started = true
	d.in, d.hungry = make(chan []byte), make(chan struct{})
	d.done, d.quit = make(chan struct{}), make(chan struct{})
	go d.run()
}

// run decodes until the stream ends, breaks, inflates too much or the
// decompressor is released.
func (d *ReaderDecompressor) run() {
	defer close(d.done)
	r, err := d.NewReader(feeder{d})
	if err != nil {
		d.fail(err)
		return
	}
	size := d.ChunkSize
	if size <= 0 {
		size = readBuffer
	}
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		d.out = append(d.out, buf[:n]...)
		if uint64(len(d.out)) > d.limit {
			d.out = d.out[:d.limit]
			if d.OnRatio != nil {
				d.OnRatio()
			}
			return
		}
		if errors.Is(err, io.EOF) {
			d.ended = !d.closed
			return
		}
		if err != nil {
			d.fail(err)
			return
		}
	}
}

// trailing counts input given after the stream ended.
func (d *ReaderDecompressor) trailing() {
	if d.ended && d.OnTrailing != nil {
		d.OnTrailing()
	}
}

// fail counts a broken stream (not a release).
func (d *ReaderDecompressor) fail(err error) {
	if !errors.Is(err, errReleased) && d.OnError != nil {
		d.OnError(err)
	}
}

// feeder is the decoder's input: the pieces Decompress hands over.
type feeder struct{ d *ReaderDecompressor }

// Read implements io.Reader: when the piece is used up, the goroutine
// tells Decompress so and waits for the next piece; the end of the body
// is io.EOF.
func (f feeder) Read(p []byte) (int, error) {
	d := f.d
	for len(d.cur) == 0 {
		if d.closed {
			return 0, io.EOF
		}
		if d.cur != nil {
			// A piece was used up: hand control back.
			select {
			case d.hungry <- struct{}{}:
			case <-d.quit:
				return 0, errReleased
			}
		}
		select {
		case b, ok := <-d.in:
			if !ok {
				d.closed = true
				continue
			}
			d.cur = b
		case <-d.quit:
			return 0, errReleased
		}
	}
	n := copy(p, d.cur)
	d.cur = d.cur[n:]
	if len(d.cur) == 0 {
		d.cur = d.cur[:0:0]
	}
	return n, nil
}
