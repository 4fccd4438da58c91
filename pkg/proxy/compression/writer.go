package compression

import (
	"bytes"
	"io"
)

// FlushWriter is a streaming encoder as Go's libraries make them: it
// writes into an io.Writer, flushes, and closes.
type FlushWriter interface {
	io.WriteCloser
	Flush() error
}

// WriterCompressor adapts a FlushWriter that writes into its Buf to
// Compressor. Its Release hook gives the writer back to its pool.
type WriterCompressor struct {
	// Buf receives the compressed bytes; W writes into it.
	Buf bytes.Buffer
	W   FlushWriter
	// OnRelease, when set, takes the compressor back.
	OnRelease func(*WriterCompressor)
}

// Compress implements Compressor.
func (c *WriterCompressor) Compress(p []byte) ([]byte, error) {
	c.Buf.Reset()
	if _, err := c.W.Write(p); err != nil {
		return nil, err
	}
	if err := c.W.Flush(); err != nil {
		return nil, err
	}
	return c.Buf.Bytes(), nil
}

// Finish implements Compressor.
func (c *WriterCompressor) Finish() ([]byte, error) {
	c.Buf.Reset()
	if err := c.W.Close(); err != nil {
		return nil, err
	}
	return c.Buf.Bytes(), nil
}

// Release implements Compressor.
func (c *WriterCompressor) Release() {
	if c.OnRelease != nil {
		c.OnRelease(c)
	}
}
