package httpconn

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// pipeH2 answers at once with a 200 whose body is body.
type pipeH2 struct{ body io.ReadCloser }

func (p pipeH2) RoundTripHTTP2(*http.Request, *upstream.Host) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: p.body}, nil
}

func TestH2UpstreamSideDeadlines(t *testing.T) {
	r, w := io.Pipe()
	st, err := upstream.OpenH2Stream(context.Background(), pipeH2{body: r}, &upstream.Host{}, &http.Request{Method: http.MethodConnect, Header: http.Header{}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	side := newH2UpstreamSide(st)
	defer side.Close()
	buf := make([]byte, 4)

	// Nothing comes: the read fails as a timeout, the stream goes on.
	_ = side.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, err := side.Read(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silent read: %d %v, want a deadline error", n, err)
	}
	go func() { _, _ = w.Write([]byte("hello")) }()
	_ = side.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(io.LimitReader(side, 5))
	if err != nil || string(got) != "hello" {
		t.Fatalf("read after a timeout: %q %v, want the bytes that came since", got, err)
	}

	// The body's end reaches the reader, and stays.
	_ = w.Close()
	for range 2 {
		if n, err := side.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("at the end: %d %v, want EOF", n, err)
		}
	}
}

func TestH2UpstreamSideClose(t *testing.T) {
	r, _ := io.Pipe()
	st, err := upstream.OpenH2Stream(context.Background(), pipeH2{body: r}, &upstream.Host{}, &http.Request{Method: http.MethodConnect, Header: http.Header{}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	side := newH2UpstreamSide(st)
	done := make(chan error, 1)
	go func() {
		_, err := side.Read(make([]byte, 4))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	_ = side.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a read across Close succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the waiting read")
	}
}
