package upstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
	cancel context.CancelFunc
}

// OpenH2Stream sends req, whose body becomes the stream's upstream
// direction, to h through rt and waits for the response head, at most
// wait when wait is above zero: the error then wraps
// context.DeadlineExceeded. The stream lives until Close or ctx's end. The
// caller decides from Resp whether the tunnel opened, and closes the
// stream in any case.
func OpenH2Stream(ctx context.Context, rt H2RoundTripper, h *Host, req *http.Request, wait time.Duration) (*H2Stream, error) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	req.Body = pr
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
	return &H2Stream{Resp: resp, pw: pw, cancel: cancel}, nil
}

// Read implements io.Reader over the response body.
func (s *H2Stream) Read(p []byte) (int, error) { return s.Resp.Body.Read(p) }

// Write implements io.Writer: request DATA, returned once the transport
// took it.
func (s *H2Stream) Write(p []byte) (int, error) { return s.pw.Write(p) }

// CloseWrite ends the request stream (END_STREAM): the half-close.
func (s *H2Stream) CloseWrite() error { return s.pw.Close() }

// Close ends the stream both ways, resetting it if the upstream has not
// ended it, and wakes a blocked Read or Write.
func (s *H2Stream) Close() error {
	s.pw.CloseWithError(net.ErrClosed)
	err := s.Resp.Body.Close()
	s.cancel()
	return err
}
