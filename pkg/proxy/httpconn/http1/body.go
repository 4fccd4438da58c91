package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// BodyKind is how a message body is delimited.
type BodyKind uint8

// The body framings of RFC 9112 §6.3.
const (
	// BodyNone: the message has no body.
	BodyNone BodyKind = iota
	// BodyLength: exactly Content-Length bytes.
	BodyLength
	// BodyChunked: the chunked transfer coding.
	BodyChunked
	// BodyUntilClose: everything until the connection closes (responses
	// only).
	BodyUntilClose
)

// maxChunkLine bounds a chunk-size line with its extensions. Extensions
// carry nothing the proxy uses, so a short bound costs nothing and keeps a
// peer from making the reader buffer without end.
const maxChunkLine = 4096

// chunkState is where a chunked decoder stands.
type chunkState uint8

const (
	chunkSize     chunkState = iota // expecting a chunk-size line
	chunkData                       // inside chunk data
	chunkDataEnd                    // expecting the CRLF after chunk data
	chunkTrailers                   // reading the trailer section
	chunkDone                       // past the final empty line
)

// BodyReader streams one message body out of a buffered connection without
// copying it: Next returns pieces of the reader's own buffer. The zero
// value is unusable; Reset prepares it for each message, so one BodyReader
// serves every message of a connection.
type BodyReader struct {
	r    *bufio.Reader
	kind BodyKind
	// remaining is what is left of the Content-Length, or of the current
	// chunk.
	remaining int64
	state     chunkState
	// trailerBytes counts the trailer section against maxTrailer.
	trailerBytes int
	maxTrailer   int
	// flush, when set, is called before any read that may block, so
	// output gathered for the peer goes out before the reader waits.
	flush func() error
	done  bool
	// keepTrailers: the trailer section is kept in trailerBuf and parsed
	// into trailers at the body's end (see KeepTrailers); otherwise it is
	// read and dropped, as Envoy does without enable_trailers.
	keepTrailers  bool
	maxTrailerNum int
	trailerBuf    []byte
	trailers      Headers
}

// Reset prepares b to read a body of the given kind from r. length is the
// Content-Length for BodyLength. maxTrailer bounds a chunked body's trailer
// section. flush, if not nil, is called before every read that may block.
func (b *BodyReader) Reset(r *bufio.Reader, kind BodyKind, length int64, maxTrailer int, flush func() error) {
	*b = BodyReader{r: r, kind: kind, remaining: length, maxTrailer: maxTrailer, flush: flush, trailerBuf: b.trailerBuf[:0]}
	switch kind {
	case BodyNone:
		b.done = true
	case BodyLength:
		b.done = length == 0
	}
}

// KeepTrailers makes b keep a chunked body's trailer section, of at most
// maxCount fields, for Trailers; call it after Reset.
func (b *BodyReader) KeepTrailers(maxCount int) {
	b.keepTrailers, b.maxTrailerNum = true, maxCount
}

// Trailers returns the trailer fields of a chunked body read to its end
// with KeepTrailers, nil otherwise. Names are lower case; the fields are
// valid until the next Reset.
func (b *BodyReader) Trailers() Headers { return b.trailers }

// Done reports whether the body has been read to its end.
func (b *BodyReader) Done() bool { return b.done }

// SkipBuffered drops the rest of a Content-Length body if all of it has
// arrived already, so that the connection can carry the next message
// without waiting. It reports whether the body is now done; a chunked or
// close-delimited body is never skipped (its end cannot be known without
// waiting).
func (b *BodyReader) SkipBuffered() bool {
	if b.done {
		return true
	}
	if b.kind != BodyLength || int64(b.r.Buffered()) < b.remaining {
		return false
	}
	_, _ = b.r.Discard(int(b.remaining))
	b.remaining, b.done = 0, true
	return true
}

// Kind returns the body's framing.
func (b *BodyReader) Kind() BodyKind { return b.kind }

// Unbuffered is what is left of a Content-Length body when none of it is
// buffered: bytes still in the connection, which a caller may move
// without the reader (zero-copy) and then report with Consume. It is 0
// for other framings, for a finished body, and while bytes are buffered.
func (b *BodyReader) Unbuffered() int64 {
	if b.done || b.kind != BodyLength || b.r.Buffered() > 0 {
		return 0
	}
	return b.remaining
}

// Consume records that n bytes of the body (at most Unbuffered) were read
// from the connection around the reader.
func (b *BodyReader) Consume(n int64) {
	b.remaining -= min(n, b.remaining)
	if b.remaining == 0 {
		b.done = true
	}
}

// Next returns the next piece of body data: a slice of the connection's
// buffer, valid until the next call on b or on its bufio.Reader. At the end
// of the body it returns nil and io.EOF. A body cut short by the peer
// closing returns ErrTruncatedBody; a malformed chunked body, an *Error.
func (b *BodyReader) Next() ([]byte, error) {
	for !b.done {
		switch b.kind {
		case BodyLength:
			return b.nextData(true)
		case BodyUntilClose:
			p, err := b.nextData(false)
			if errors.Is(err, io.EOF) {
				b.done = true
			}
			return p, err
		case BodyChunked:
			if b.state == chunkData {
				return b.nextData(true)
			}
			if err := b.advanceChunked(); err != nil {
				return nil, err
			}
		}
	}
	return nil, io.EOF
}

// nextData returns up to remaining buffered bytes (all of them when
// unbounded), reading once when none is buffered.
func (b *BodyReader) nextData(bounded bool) ([]byte, error) {
	n := b.r.Buffered()
	if n == 0 {
		if err := b.fill(1); err != nil {
			if bounded && errors.Is(err, io.EOF) {
				return nil, ErrTruncatedBody
			}
			return nil, err
		}
		n = b.r.Buffered()
	}
	if bounded && int64(n) > b.remaining {
		n = int(b.remaining)
	}
	p, _ := b.r.Peek(n)
	// Discarding only advances the reader's index: the bytes stay where
	// they are until the next read refills the buffer.
	_, _ = b.r.Discard(n)
	if bounded {
		b.remaining -= int64(n)
		if b.remaining == 0 {
			if b.kind == BodyLength {
				b.done = true
			} else {
				b.state = chunkDataEnd
			}
		}
	}
	return p, nil
}

// fill makes at least n bytes buffered, flushing pending output first if
// that means waiting for the peer.
func (b *BodyReader) fill(n int) error {
	if b.r.Buffered() >= n {
		return nil
	}
	if b.flush != nil {
		if err := b.flush(); err != nil {
			return err
		}
	}
	_, err := b.r.Peek(n)
	return err
}

// advanceChunked consumes chunked framing until data is available or the
// body ends.
func (b *BodyReader) advanceChunked() error {
	switch b.state {
	case chunkSize:
		line, err := b.line(maxChunkLine, ErrChunkLineTooLong)
		if err != nil {
			return err
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return err
		}
		if size == 0 {
			b.state = chunkTrailers
		} else {
			b.remaining, b.state = size, chunkData
		}
	case chunkDataEnd:
		if err := b.fill(2); err != nil {
			return truncated(err)
		}
		crlf, _ := b.r.Peek(2)
		if crlf[0] != '\r' || crlf[1] != '\n' {
			return ErrChunkFraming
		}
		_, _ = b.r.Discard(2)
		b.state = chunkSize
	case chunkTrailers:
		line, err := b.line(b.maxTrailer-b.trailerBytes, ErrTrailersTooLarge)
		if err != nil {
			return err
		}
		b.trailerBytes += len(line) + 2
		if len(line) == 0 {
			b.state, b.done = chunkDone, true
			if len(b.trailerBuf) > 0 {
				// The section is validated like a header section
				// (names lower-cased in place, values checked).
				fields, err := parseFields(b.trailerBuf, nil, b.maxTrailerNum)
				if err != nil {
					return err
				}
				b.trailers = fields
			}
		} else if b.keepTrailers {
			b.trailerBuf = append(append(b.trailerBuf, line...), '\r', '\n')
		}
	}
	return nil
}

// line reads a CRLF-terminated framing line of at most max bytes and
// returns it without the CRLF. The slice is valid until the next read.
func (b *BodyReader) line(max int, tooLong *Error) ([]byte, error) {
	for {
		buf, _ := b.r.Peek(b.r.Buffered())
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			if i > max+1 {
				return nil, tooLong
			}
			if i == 0 || buf[i-1] != '\r' {
				return nil, ErrChunkFraming
			}
			_, _ = b.r.Discard(i + 1)
			return buf[:i-1], nil
		}
		if len(buf) > max+1 {
			return nil, tooLong
		}
		if len(buf) == b.r.Size() {
			// The line cannot fit in the reader's buffer.
			return nil, tooLong
		}
		if err := b.fill(len(buf) + 1); err != nil {
			return nil, truncated(err)
		}
	}
}

// truncated turns the end of input inside a body into ErrTruncatedBody.
func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return ErrTruncatedBody
	}
	return err
}

// parseChunkSize reads chunk-size [ chunk-ext ] (RFC 9112 §7.1): hex
// digits, then nothing, or optional whitespace and extensions, which are
// checked for control characters and ignored.
func parseChunkSize(line []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		d, ok := hexValue(line[i])
		if !ok {
			break
		}
		if i == 15 {
			// 15 hex digits are 2^60 bytes: more is no real body and
			// would overflow.
			return 0, ErrChunkSize
		}
		n = n<<4 | int64(d)
	}
	if i == 0 {
		return 0, ErrChunkSize
	}
	rest := line[i:]
	if len(rest) == 0 {
		return n, nil
	}
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	if len(rest) == 0 || rest[0] != ';' {
		return 0, ErrChunkSize
	}
	for _, c := range rest {
		if chars[c]&classValue == 0 {
			return 0, ErrChunkSize
		}
	}
	return n, nil
}

// hexValue returns the value of a hexadecimal digit.
func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Ready reports whether Next would return without waiting for the peer:
// body bytes, or the body's end, are among the buffered bytes (or
// framing Next fails on). It reads nothing: chunked framing is looked at
// in the buffer, as Next would parse it. A chunk-size line or trailer
// section not complete yet is not ready.
func (b *BodyReader) Ready() bool {
	if b.done {
		return true
	}
	buf, _ := b.r.Peek(b.r.Buffered())
	if len(buf) == 0 {
		return false
	}
	if b.kind != BodyChunked || b.state == chunkData {
		return true
	}
	state := b.state
	for {
		switch state {
		case chunkDataEnd:
			if len(buf) < 2 {
				return false
			}
			if buf[0] != '\r' || buf[1] != '\n' {
				return true
			}
			buf, state = buf[2:], chunkSize
		case chunkSize, chunkTrailers:
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				// An over-long line fails at once.
				return state == chunkSize && len(buf) > maxChunkLine+1
			}
			if i == 0 || buf[i-1] != '\r' {
				return true
			}
			line := buf[:i-1]
			buf = buf[i+1:]
			if state == chunkTrailers {
				if len(line) == 0 {
					return true
				}
				continue
			}
			size, err := parseChunkSize(line)
			switch {
			case err != nil:
				return true
			case size == 0:
				state = chunkTrailers
			default:
				return len(buf) > 0
			}
		default:
			return true
		}
	}
}
