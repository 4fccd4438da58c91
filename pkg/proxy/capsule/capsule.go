// Package capsule codes the HTTP capsules of RFC 9297 that carry UDP
// proxying payloads (RFC 9298): a DATAGRAM capsule holds a context ID
// (0 for a UDP payload) and one datagram. The UDP proxy's http_capsule
// session filter and the CONNECT-UDP terminator of the HTTP connection
// manager share it: one side turns datagrams into capsules, the other
// parses a byte stream back into datagrams.
package capsule

import "errors"

// Datagram is the DATAGRAM capsule type (RFC 9297, section 3.5).
const Datagram = 0x00

// MaxBuffered bounds the bytes a Parser keeps of an incomplete capsule,
// as quiche's capsule parser (which Envoy uses) bounds them: past it,
// parsing fails.
const MaxBuffered = 1 << 20

// ErrMalformed is a capsule that cannot be parsed.
var ErrMalformed = errors.New("malformed capsule")

// AppendDatagram appends to dst a DATAGRAM capsule whose payload is
// context ID 0 and the datagram b.
func AppendDatagram(dst, b []byte) []byte {
	// The capsule's value: the context ID (0, one byte) and the datagram.
	n := uint64(len(b)) + 1
	dst = AppendVarint(dst, Datagram)
	dst = AppendVarint(dst, n)
	dst = append(dst, 0)
	return append(dst, b...)
}

// Parser parses a byte stream, delivered in pieces of any size, into the
// UDP payloads of its DATAGRAM capsules with context ID 0; other capsule
// types and context IDs are skipped, as Envoy's (quiche's) parser skips
// them. Once it failed it stays failed.
type Parser struct {
	// buf holds the bytes not yet parsed into whole capsules.
	buf    []byte
	failed bool
}

// Parse takes the next bytes of the stream and returns the datagrams of
// the capsules they complete, copies the caller may keep. err is
// ErrMalformed when the bytes cannot be parsed: the datagrams before the
// failure are still returned, and every later call fails.
func (p *Parser) Parse(b []byte) (out [][]byte, err error) {
	if p.failed {
		return nil, ErrMalformed
	}
	p.buf = append(p.buf, b...)
	for {
		payload, typ, used, err := parseOne(p.buf)
		if err != nil {
			p.fail()
			return out, err
		}
		if used == 0 {
			break
		}
		if typ == Datagram {
			ctxID, n, ok := ReadVarint(payload)
			if !ok {
				// A DATAGRAM capsule without a context ID is a parse
				// failure (Envoy resets the stream on it).
				p.fail()
				return out, ErrMalformed
			}
			if ctxID == 0 {
				out = append(out, append([]byte(nil), payload[n:]...))
			}
		}
		p.buf = p.buf[used:]
	}
	if len(p.buf) > MaxBuffered {
		p.fail()
		return out, ErrMalformed
	}
	if len(p.buf) == 0 {
		p.buf = nil
	}
	return out, nil
}

// Buffered is the number of bytes held of an incomplete capsule.
func (p *Parser) Buffered() int { return len(p.buf) }

// fail puts the parser in its failed state for good.
func (p *Parser) fail() {
	p.failed = true
	p.buf = nil
}

// parseOne reads one capsule at the start of b: its type, its value and
// the bytes it took; used is 0 when b does not hold a whole capsule yet.
func parseOne(b []byte) (value []byte, typ uint64, used int, err error) {
	typ, n, ok := ReadVarint(b)
	if !ok {
		return nil, 0, 0, nil
	}
	length, m, ok := ReadVarint(b[n:])
	if !ok {
		return nil, 0, 0, nil
	}
	start := n + m
	if length > uint64(MaxBuffered) {
		// It could never be buffered whole.
		return nil, 0, 0, ErrMalformed
	}
	if uint64(len(b)-start) < length {
		return nil, 0, 0, nil
	}
	end := start + int(length)
	return b[start:end], typ, end, nil
}

// ReadVarint reads a QUIC variable-length integer (RFC 9000, section 16)
// at the start of b: its value and its length; ok is false when b is too
// short.
func ReadVarint(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, false
	}
	v = uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n, true
}

// VarintLen is the length of v as a QUIC variable-length integer.
func VarintLen(v uint64) int {
	switch {
	case v < 1<<6:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<30:
		return 4
	}
	return 8
}

// AppendVarint appends v as a QUIC variable-length integer, in its
// shortest form.
func AppendVarint(b []byte, v uint64) []byte {
	switch VarintLen(v) {
	case 1:
		return append(b, byte(v))
	case 2:
		return append(b, byte(v>>8)|0x40, byte(v))
	case 4:
		return append(b, byte(v>>24)|0x80, byte(v>>16), byte(v>>8), byte(v))
	}
	return append(b, byte(v>>56)|0xc0, byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// Failed reports whether the parser met bytes it could not parse.
func (p *Parser) Failed() bool { return p.failed }
