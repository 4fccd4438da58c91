package deflate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// Errors of a broken gzip wrapper, in zlib's words.
var (
	ErrGzipHeader = errors.New("incorrect header check")
	ErrGzipMethod = errors.New("unknown compression method")
	ErrGzipFlags  = errors.New("unknown header flags set")
	ErrGzipCRC    = errors.New("incorrect data check")
	ErrGzipLength = errors.New("incorrect length check")
)

// Header flags (RFC 1952 2.3.1).
const (
	flagHCRC    = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
	flagsKnown  = 0x1f
)

// GzipReader decodes the gzip format (zlib's windowBits+16) with an
// Inflater of the given window: members one after another, each header
// skipped and each trailer's CRC-32 and length checked, as Go's gzip
// reader does in its default multistream mode.
type GzipReader struct {
	src        *bufio.Reader
	f          Inflater
	windowBits int
	crc        uint32
	size       uint32
	inMember   bool
	// members counts the members begun: only the first is required.
	members int
	err     error
}

// NewGzipReader reads the gzip stream of r with a window of 1 <<
// windowBits bytes (8 to 15).
func NewGzipReader(r io.Reader, windowBits int) (*GzipReader, error) {
	if windowBits < 8 || windowBits > 15 {
		return nil, errors.New("window bits must be 8 to 15")
	}
	return &GzipReader{src: bufio.NewReader(r), windowBits: windowBits}, nil
}

// Read implements io.Reader.
func (g *GzipReader) Read(p []byte) (int, error) {
	for g.err == nil {
		if !g.inMember {
			g.err = g.header()
			continue
		}
		n, err := g.f.Read(p)
		g.crc = crc32.Update(g.crc, crc32.IEEETable, p[:n])
		g.size += uint32(n)
		switch {
		case err == io.EOF:
			g.err = g.trailer()
		case err != nil:
			g.err = err
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, g.err
}

// header reads the next member's header, or ends the stream with io.EOF
// where no member starts (the first must).
func (g *GzipReader) header() error {
	var h [10]byte
	n, err := io.ReadFull(g.src, h[:])
	switch {
	case n == 0 && err == io.EOF && g.started():
		return io.EOF
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return io.ErrUnexpectedEOF
	case err != nil:
		return err
	}
	if h[0] != 0x1f || h[1] != 0x8b {
		return ErrGzipHeader
	}
	if h[2] != 8 {
		return ErrGzipMethod
	}
	flags := h[3]
	if flags&^flagsKnown != 0 {
		return ErrGzipFlags
	}
	if flags&flagExtra != 0 {
		var x [2]byte
		if _, err := io.ReadFull(g.src, x[:]); err != nil {
			return eofUnexpected(err)
		}
		if _, err := g.src.Discard(int(binary.LittleEndian.Uint16(x[:]))); err != nil {
			return eofUnexpected(err)
		}
	}
	for _, f := range []byte{flagName, flagComment} {
		if flags&f != 0 {
			if _, err := g.src.ReadSlice(0); err != nil && err != bufio.ErrBufferFull {
				return eofUnexpected(err)
			} else if err == bufio.ErrBufferFull {
				if err := skipPastZero(g.src); err != nil {
					return err
				}
			}
		}
	}
	if flags&flagHCRC != 0 {
		if _, err := g.src.Discard(2); err != nil {
			return eofUnexpected(err)
		}
	}
	g.f.Reset(g.src, g.windowBits)
	g.crc, g.size, g.inMember = 0, 0, true
	g.members++
	return nil
}

// started reports whether a member has been read.
func (g *GzipReader) started() bool { return g.members > 0 }

// skipPastZero discards bytes up to and including the next zero byte.
func skipPastZero(r *bufio.Reader) error {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return eofUnexpected(err)
		}
		if b == 0 {
			return nil
		}
	}
}

// trailer checks a member's CRC-32 and length.
func (g *GzipReader) trailer() error {
	src := g.f.ByteSource()
	var t [8]byte
	for i := range t {
		b, err := src.ReadByte()
		if err != nil {
			return eofUnexpected(err)
		}
		t[i] = b
	}
	// The bit buffer never holds more than the trailer: what the
	// inflater read ahead is all in t now.
	if binary.LittleEndian.Uint32(t[:4]) != g.crc {
		return ErrGzipCRC
	}
	if binary.LittleEndian.Uint32(t[4:]) != g.size {
		return ErrGzipLength
	}
	g.inMember = false
	return nil
}

// eofUnexpected turns the end of the input inside a structure into
// io.ErrUnexpectedEOF.
func eofUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
