package deflate

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// gzipPiece bounds the input compressed between writes to the
// destination, so that a large Write does not hold all of its output.
const gzipPiece = 64 << 10

// GzipWriter writes the gzip format (zlib's windowBits+16) through an
// Encoder into an io.Writer.
type GzipWriter struct {
	e          *Encoder
	w          io.Writer
	xfl        byte
	crc        uint32
	size       uint32
	headerDone bool
	closed     bool
}

// NewGzipWriter makes a gzip writer into w with the given parameters.
func NewGzipWriter(w io.Writer, o Options) (*GzipWriter, error) {
	e, err := NewEncoder(o)
	if err != nil {
		return nil, err
	}
	g := &GzipWriter{e: e, w: w}
	// zlib's header marks the slowest and the fastest settings.
	switch {
	case e.level == 9:
		g.xfl = 2
	case e.strategy >= HuffmanOnly || e.level < 2:
		g.xfl = 4
	}
	return g, nil
}

// Reset starts a new stream into w.
func (g *GzipWriter) Reset(w io.Writer) {
	g.e.Reset()
	g.w = w
	g.crc, g.size = 0, 0
	g.headerDone, g.closed = false, false
}

// header starts the stream, as zlib does on its first call: no name,
// no time, OS "Unix".
func (g *GzipWriter) header() {
	if !g.headerDone {
		g.e.bw.out = append(g.e.bw.out, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, g.xfl, 3)
		g.headerDone = true
	}
}

// Write implements io.Writer.
func (g *GzipWriter) Write(p []byte) (int, error) {
	if g.closed {
		return 0, io.ErrClosedPipe
	}
	g.header()
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), gzipPiece)
		g.crc = crc32.Update(g.crc, crc32.IEEETable, p[:k])
		g.size += uint32(k)
		g.e.Write(p[:k])
		p = p[k:]
		if g.e.pending() >= gzipPiece {
			if err := g.drain(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// Flush sync-flushes: what was written so far decodes from the output.
func (g *GzipWriter) Flush() error {
	if g.closed {
		return nil
	}
	g.header()
	g.e.Flush()
	return g.drain()
}

// Close ends the deflate stream and writes the gzip trailer.
func (g *GzipWriter) Close() error {
	if g.closed {
		return nil
	}
	g.header()
	g.e.Close()
	g.closed = true
	g.e.bw.out = binary.LittleEndian.AppendUint32(g.e.bw.out, g.crc)
	g.e.bw.out = binary.LittleEndian.AppendUint32(g.e.bw.out, g.size)
	return g.drain()
}

func (g *GzipWriter) drain() error {
	out := g.e.Output()
	if len(out) == 0 {
		return nil
	}
	_, err := g.w.Write(out)
	return err
}
