package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxLeadingBlankBytes bounds the empty lines skipped before a request line
// (RFC 9112 §2.2 lets servers ignore at least one), so a peer cannot keep
// the reader busy with an endless stream of CRLFs.
const maxLeadingBlankBytes = 64

// ReadHead reads one message head (start line, header fields and the blank
// line that ends them) from r and copies it into dst[:0], reusing dst's
// capacity. It returns the head, which the parsers take apart in place.
//
// Empty lines before the start line are skipped. It returns io.EOF when r
// ends before the head's first byte (a clean close between messages),
// ErrTruncatedHead when it ends inside the head, and ErrHeadTooLarge once
// the head exceeds max bytes.
func ReadHead(r *bufio.Reader, dst []byte, max int) ([]byte, error) {
	dst = dst[:0]
	// start is where the head begins in dst (after skipped empty lines);
	// lineStart is where the line being scanned begins.
	start, lineStart := 0, 0
	for {
		buf, err := buffered(r)
		if len(buf) == 0 {
			if errors.Is(err, io.EOF) {
				if len(dst) == start {
					return dst[:0], io.EOF
				}
				return dst[:0], ErrTruncatedHead
			}
			return dst[:0], err
		}
		base := len(dst)
		i := 0
		for {
			j := bytes.IndexByte(buf[i:], '\n')
			if j < 0 {
				break
			}
			end := base + i + j // absolute offset of this '\n'
			i += j + 1
			n := end - lineStart
			blank := n == 0 || (n == 1 && byteAt(dst, buf, base, lineStart) == '\r')
			if !blank {
				lineStart = end + 1
				continue
			}
			if lineStart == start {
				// An empty line before the start line.
				if end+1 > maxLeadingBlankBytes {
					return dst[:0], ErrRequestLine
				}
				start, lineStart = end+1, end+1
				continue
			}
			dst = append(dst, buf[:i]...)
			if _, err := r.Discard(i); err != nil {
				return dst[:0], err
			}
			if len(dst)-start > max {
				return dst[:0], ErrHeadTooLarge
			}
			return dst[start:], nil
		}
		dst = append(dst, buf...)
		if _, err := r.Discard(len(buf)); err != nil {
			return dst[:0], err
		}
		if len(dst)-start > max {
			return dst[:0], ErrHeadTooLarge
		}
	}
}

// byteAt returns the byte at absolute offset off of dst followed by buf,
// where buf starts at offset base.
func byteAt(dst, buf []byte, base, off int) byte {
	if off < base {
		return dst[off]
	}
	return buf[off-base]
}

// buffered returns the bytes r holds, reading once if it holds none. The
// slice is valid until the next read from r.
func buffered(r *bufio.Reader) ([]byte, error) {
	n := r.Buffered()
	if n == 0 {
		if _, err := r.Peek(1); err != nil {
			return nil, err
		}
		n = r.Buffered()
	}
	return r.Peek(n)
}

// ReadRequestHead reads a request head as ReadHead does, but fails as soon
// as the bytes that arrive cannot start a request, without waiting for the
// line feed that ends the request line (which garbage may never send): the
// method must be a token (RFC 9110 §9.1), so its first byte, after any empty
// lines ReadHead skips, and every byte up to the space that ends it must be
// token characters. A TLS ClientHello, a binary protocol or a stray space
// thus gets ErrMethod at its first byte, as Envoy's parser answers at the
// first byte that cannot begin a method.
//
// The check reads nothing more than the head needs and copies nothing: on
// a busy connection the next request's method is usually buffered already,
// and checking it costs a scan of a few bytes.
func ReadRequestHead(r *bufio.Reader, dst []byte, max int) ([]byte, error) {
	if err := checkMethod(r); err != nil {
		return dst[:0], err
	}
	return ReadHead(r, dst, max)
}

// The states of checkMethod.
const (
	// methodLead: before the method, where empty lines may come.
	methodLead = iota
	// methodLeadCR: a carriage return before the method, which must end
	// an empty line.
	methodLeadCR
	// methodName: inside the method.
	methodName
)

// checkMethod looks at r's first bytes, waiting for more as they are
// needed, until the space that ends the method. It consumes nothing. It
// returns ErrMethod for a byte that cannot be part of the method,
// ErrRequestLine for too many empty lines (as ReadHead would), and nil once
// the method is complete, or when it is longer than r's buffer (ReadHead
// and ParseRequest then judge it). I/O errors are mapped as ReadHead maps
// them: io.EOF before anything but empty lines, ErrTruncatedHead after.
func checkMethod(r *bufio.Reader) error {
	// The common case first: a method already buffered whole, with
	// nothing before it.
	if buf, _ := r.Peek(r.Buffered()); len(buf) > 0 && buf[0] != ' ' {
		for _, c := range buf {
			if c == ' ' {
				return nil
			}
			if chars[c]&classToken == 0 {
				break
			}
		}
	}
	state := methodLead
	for i := 0; ; {
		n := r.Buffered()
		if n <= i {
			if _, err := r.Peek(i + 1); err != nil {
				switch {
				case errors.Is(err, bufio.ErrBufferFull):
					return nil
				case !errors.Is(err, io.EOF):
					return err
				case state == methodLead:
					return io.EOF
				}
				return ErrTruncatedHead
			}
			n = r.Buffered()
		}
		buf, _ := r.Peek(n)
		for ; i < len(buf); i++ {
			c := buf[i]
			switch state {
			case methodName:
				if c == ' ' {
					return nil
				}
				if chars[c]&classToken == 0 {
					return ErrMethod
				}
			case methodLeadCR:
				if c != '\n' {
					// "\rX" begins a start line whose method holds
					// a carriage return.
					return ErrMethod
				}
				state = methodLead
				if i+1 > maxLeadingBlankBytes {
					return ErrRequestLine
				}
			default:
				switch {
				case c == '\r':
					state = methodLeadCR
				case c == '\n':
					if i+1 > maxLeadingBlankBytes {
						return ErrRequestLine
					}
				case chars[c]&classToken != 0:
					state = methodName
				default:
					return ErrMethod
				}
			}
		}
	}
}
