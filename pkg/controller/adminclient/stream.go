package adminclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxStreamError bounds how much of a refused stream's answer is read.
const maxStreamError = 4096

// Stream makes a call whose answer is a stream that lasts until the proxy
// ends it (POST /tap): it sends body as JSON, waits at most the call
// timeout for the answer's status, and returns the body of a 200 answer,
// which the caller reads until it ends or ctx is done, then closes.
// Another answer is a *StatusError.
func (s *Session) Stream(ctx context.Context, method, path string, body []byte) (io.ReadCloser, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	u := url.URL{Scheme: "http", Host: "proxy-admin", Path: path}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	// Only the wait for the answer's status is bounded: the stream itself
	// lasts as long as the caller wants it.
	timer := time.AfterFunc(s.timeout, cancel)
	resp, err := s.conn.RoundTrip(req)
	timedOut := !timer.Stop()
	switch {
	case timedOut:
		err = fmt.Errorf("%s %s on %s: no answer within %s", method, path, s.endpoint, s.timeout)
		if resp != nil {
			_ = resp.Body.Close()
		}
	case err != nil:
		err = fmt.Errorf("%s %s on %s: %w", method, path, s.endpoint, err)
	case resp.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxStreamError))
		_ = resp.Body.Close()
		err = &StatusError{Method: method, Path: path, Code: resp.StatusCode, Body: firstLine(b)}
	}
	if s.observe != nil {
		s.observe(method, path, time.Since(start), err)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &streamBody{ReadCloser: resp.Body, cancel: cancel}, nil
}

// streamBody is a streamed answer; closing it ends the call.
type streamBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the body and releases the call's context.
func (b *streamBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
