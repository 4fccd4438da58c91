package upstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// H2RoundTripper is a cluster's HTTP/2 pool as a tunnel stream needs it.
type H2RoundTripper interface {
	// RoundTripHTTP2 sends req to h over the cluster's HTTP/2
	// connections.
	RoundTripHTTP2(req *http.Request, h *Host) (*http.Response, error)
}

// H2Stream is one HTTP/2 stream to an upstream whose DATA frames carry a
// tunnel's bytes both ways: a CONNECT (the TCP proxy's tunneling_config, a
// forwarded CONNECT), an RFC 8441 extended CONNECT (an upgrade) or a POST
// tunnel. Writes go out as request DATA, CloseWrite ends the request
// (END_STREAM), reads take the response body, and Close resets the stream
// if it is still open.
type H2Stream struct {
	// Resp is the upstream's answer; its body is read through the
	// stream.
	Resp   *http.Response
	pw     *io.PipeWriter
	body   *h2RequestBody
	cancel context.CancelFunc
	// wroteEnd and readEnd record both sides' ends: CloseWrite was
	// called, the response body reached its end. Each is set by the one
	// goroutine that writes, or reads.
	wroteEnd, readEnd atomic.Bool
	closeOnce         sync.Once
	closeErr          error
}

// h2EndGrace bounds how long Close waits, after both sides ended, for the
// transport to send the request's last DATA and END_STREAM before it
// resets the stream: the upstream's flow-control window may stay shut.
const h2EndGrace = 5 * time.Second

// h2RequestBody is the request body the transport reads, the pipe Write
// feeds; closed is closed when the transport is done with it, having
// sent END_STREAM (or given up).
type h2RequestBody struct {
	*io.PipeReader
	once   sync.Once
	closed chan struct{}
}

// Close implements io.Closer; the transport calls it when done.
func (b *h2RequestBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return b.PipeReader.Close()
}

// OpenH2Stream sends req, whose body becomes the stream's upstream
// direction, to h through rt and waits for the response head, at most
// wait when wait is above zero: the error then wraps
// context.DeadlineExceeded. The stream lives until Close or ctx's end. The
// caller decides from Resp whether the tunnel opened, and closes the
// stream in any case.
func OpenH2Stream(ctx context.Context, rt H2RoundTripper, h *Host, req *http.Request, wait time.Duration) (*H2Stream, error) {
	pr, pw := io.Pipe()
	body := &h2RequestBody{PipeReader: pr, closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	req.Body = body
	// An unknown length: the body is the stream.
	req.ContentLength = -1
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/2.0", 2, 0
	var (
		answered *time.Timer
		expired  = make(chan struct{})
	)
	if wait > 0 {
		answered = time.AfterFunc(wait, func() {
			close(expired)
			cancel()
		})
	}
	resp, err := rt.RoundTripHTTP2(req.WithContext(ctx), h)
	if answered != nil && !answered.Stop() {
		// The timer fired: whatever came, the wait ended first.
		<-expired
		if err == nil {
			_ = resp.Body.Close()
		}
		err = fmt.Errorf("%w: no response head within %s", context.DeadlineExceeded, wait)
	}
	if err != nil {
		cancel()
		_ = pw.Close()
		return nil, err
	}
	return &H2Stream{Resp: resp, pw: pw, body: body, cancel: cancel}, nil
}

// Read implements io.Reader over the response body.
func (s *H2Stream) Read(p []byte) (int, error) {
	n, err := s.Resp.Body.Read(p)
	if err == io.EOF {
		s.readEnd.Store(true)
	}
	return n, err
}

// Write implements io.Writer: request DATA, returned once the transport
// took it.
func (s *H2Stream) Write(p []byte) (int, error) { return s.pw.Write(p) }

// CloseWrite ends the request stream (END_STREAM): the half-close.
func (s *H2Stream) CloseWrite() error {
	s.wroteEnd.Store(true)
	return s.pw.Close()
}

// Close ends the stream both ways and wakes a blocked Read or Write. A
// stream both sides ended closes cleanly once the transport has sent what
// it holds (within h2EndGrace); any other is reset.
func (s *H2Stream) Close() error {
	s.closeOnce.Do(func() {
		if s.wroteEnd.Load() && s.readEnd.Load() {
			t := time.NewTimer(h2EndGrace)
			select {
			case <-s.body.closed:
			case <-t.C:
			}
			t.Stop()
		}
		s.pw.CloseWithError(net.ErrClosed)
		s.closeErr = s.Resp.Body.Close()
		s.cancel()
	})
	return s.closeErr
}
