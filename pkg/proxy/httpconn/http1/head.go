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
