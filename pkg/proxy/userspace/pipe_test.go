package userspace

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/net/nettest"
)

// TestConnConformance runs the net.Conn conformance suite (concurrent
// reads and writes, deadlines, close) over a pipe.
func TestConnConformance(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		a, b := Pipe(0, Addr{Listener: "l"})
		return a, b, func() { _ = a.Close(); _ = b.Close() }, nil
	})
}

func TestAddresses(t *testing.T) {
	c, s := Pipe(16, Addr{Listener: "inner", EndpointID: "e1"})
	if got := c.RemoteAddr().String(); got != "envoy://inner/e1" {
		t.Errorf("client remote %q", got)
	}
	if got := s.LocalAddr().String(); got != "envoy://inner/e1" {
		t.Errorf("server local %q", got)
	}
	if got := s.RemoteAddr().String(); got != "envoy://internal_client_address/" {
		t.Errorf("server remote %q", got)
	}
	if got := s.LocalAddr().Network(); got != "envoy_internal" {
		t.Errorf("network %q", got)
	}
	for in, want := range map[string]Addr{
		"envoy://inner/e1":  {Listener: "inner", EndpointID: "e1"},
		"envoy://inner/":    {Listener: "inner"},
		"envoy://inner/a/b": {Listener: "inner", EndpointID: "a/b"},
	} {
		if got, ok := ParseAddr(in); !ok || got != want {
			t.Errorf("ParseAddr(%q) = %+v, %v", in, got, ok)
		}
	}
	for _, bad := range []string{"127.0.0.1:80", "envoy:///x", "/tmp/sock"} {
		if _, ok := ParseAddr(bad); ok {
			t.Errorf("ParseAddr(%q) accepted", bad)
		}
	}
}

// TestFlowControl: a writer of more than the buffer holds waits until the
// reader makes room, and never has more than the buffer in flight.
func TestFlowControl(t *testing.T) {
	const size = 1024
	c, s := Pipe(size, Addr{Listener: "l"})
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		done <- err
	}()
	// The writer is stuck with a full buffer: a deadline-bound peek sees
	// exactly size bytes waiting.
	buf := make([]byte, 2*size)
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := s.Peek(buf, size)
	if err != nil || n != size {
		t.Fatalf("peek: %d %v", n, err)
	}
	select {
	case err := <-done:
		t.Fatalf("write of %d bytes into a %d-byte buffer returned early: %v", len(payload), size, err)
	default:
	}
	_ = s.SetReadDeadline(time.Time{})
	got, err := io.ReadAll(io.LimitReader(s, int64(len(payload))))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestHalfClose: CloseWrite gives the peer io.EOF after the data, and the
// other direction keeps working.
func TestHalfClose(t *testing.T) {
	c, s := Pipe(64, Addr{Listener: "l"})
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "request" {
		t.Fatalf("server read %q, %v", got, err)
	}
	if _, err := c.Write([]byte("x")); !IsPeerGone(err) {
		t.Fatalf("write after CloseWrite: %v", err)
	}
	if _, err := s.Write([]byte("response")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	got, err = io.ReadAll(c)
	if err != nil || string(got) != "response" {
		t.Fatalf("client read %q, %v", got, err)
	}
}

// TestCloseWakesPeer: closing one end ends a read and a write blocked on
// the other, and fails the peer's later writes.
func TestCloseWakesPeer(t *testing.T) {
	c, s := Pipe(4, Addr{Listener: "l"})
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("more than four bytes"))
		werr <- err
	}()
	rerr := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(c)
		rerr <- err
	}()
	time.Sleep(10 * time.Millisecond) // let both block; the test holds without it
	_ = s.Close()
	if err := <-werr; !IsPeerGone(err) {
		t.Errorf("blocked write: %v", err)
	}
	if err := <-rerr; err != nil {
		t.Errorf("read after peer close: %v", err)
	}
	if _, err := c.Write([]byte("x")); !IsPeerGone(err) {
		t.Errorf("write after peer close: %v", err)
	}
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on closed end: %v", err)
	}
}

func TestPeekDeadlineAndEOF(t *testing.T) {
	c, s := Pipe(64, Addr{Listener: "l"})
	_ = s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Peek(make([]byte, 8), 4); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("peek with nothing: %v", err)
	}
	_ = s.SetReadDeadline(time.Time{})
	_, _ = c.Write([]byte("ab"))
	_ = c.CloseWrite()
	if _, err := s.Peek(make([]byte, 8), 4); !errors.Is(err, io.EOF) {
		t.Fatalf("peek short of want before EOF: %v", err)
	}
	got, _ := io.ReadAll(s)
	if string(got) != "ab" {
		t.Fatalf("read after peek %q", got)
	}
}
