package sockio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection: the dialled one and
// the accepted one.
func pair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); a.Close() })
	return d.(*net.TCPConn), a.(*net.TCPConn)
}

// sameError checks that got is the error want is, as net.Conn made it:
// the same operation, network, addresses and cause.
func sameError(t *testing.T, got, want error) {
	t.Helper()
	var g, w *net.OpError
	if !errors.As(got, &g) || !errors.As(want, &w) {
		t.Fatalf("got %v (%T), want %v (%T): not both *net.OpError", got, got, want, want)
	}
	if got.Error() != want.Error() {
		t.Fatalf("got %q, want %q", got, want)
	}
	if g.Op != w.Op || g.Net != w.Net || (g.Err == nil) != (w.Err == nil) {
		t.Fatalf("got %+v, want %+v", g, w)
	}
	if g.Timeout() != w.Timeout() || errors.Is(got, os.ErrDeadlineExceeded) != errors.Is(want, os.ErrDeadlineExceeded) || errors.Is(got, net.ErrClosed) != errors.Is(want, net.ErrClosed) {
		t.Fatalf("got %v, want %v: not the same kind", got, want)
	}
}

func TestReadWriteRoundTrip(t *testing.T) {
	d, a := pair(t)
	c := New(d, "tcp")
	if _, err := a.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %d %v %q", n, err, buf[:n])
	}
	if n, err := c.Write([]byte("world")); n != 5 || err != nil {
		t.Fatalf("Write = %d %v", n, err)
	}
	n, err = io.ReadFull(a, buf[:5])
	if err != nil || string(buf[:n]) != "world" {
		t.Fatalf("peer read %d %v %q", n, err, buf[:n])
	}
	// Empty reads and writes behave as the net.Conn's.
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d %v", n, err)
	}
	if n, err := c.Write(nil); n != 0 || err != nil {
		t.Fatalf("Write(nil) = %d %v", n, err)
	}
}

// TestReadWaits: a read with nothing there waits in the netpoller for the
// bytes, rather than failing with EAGAIN.
func TestReadWaits(t *testing.T) {
	d, a := pair(t)
	c := New(d, "tcp")
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = a.Write([]byte("late"))
	}()
	buf := make([]byte, 8)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "late" {
		t.Fatalf("Read = %d %v %q", n, err, buf[:n])
	}
}

// TestWriteWaitsForRoom: a write larger than the socket buffers waits for
// room as the peer reads, and writes all of it.
func TestWriteWaitsForRoom(t *testing.T) {
	d, a := pair(t)
	c := New(d, "tcp")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(a)
		got <- b
	}()
	n, err := c.Write(big)
	if n != len(big) || err != nil {
		t.Fatalf("Write = %d %v", n, err)
	}
	_ = d.CloseWrite()
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("peer read %d bytes, not the %d written", len(b), len(big))
	}
}

func TestWriteBuffers(t *testing.T) {
	d, a := pair(t)
	c := New(d, "tcp")
	big := bytes.Repeat([]byte("x"), 3<<20)
	v := net.Buffers{[]byte("head "), nil, []byte(""), big, []byte(" tail")}
	want := len("head ") + len(big) + len(" tail")
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(a)
		got <- b
	}()
	n, err := c.WriteBuffers(&v)
	if n != int64(want) || err != nil {
		t.Fatalf("WriteBuffers = %d %v", n, err)
	}
	if len(v) != 0 {
		t.Fatalf("%d pieces left in v, want none (consumed as net.Buffers.WriteTo does)", len(v))
	}
	_ = d.CloseWrite()
	b := <-got
	if len(b) != want || string(b[:5]) != "head " || string(b[len(b)-5:]) != " tail" {
		t.Fatalf("peer read %d bytes", len(b))
	}
	var empty net.Buffers
	if n, err := c.WriteBuffers(&empty); n != 0 || err != nil {
		t.Fatalf("WriteBuffers(empty) = %d %v", n, err)
	}
}

func TestEOF(t *testing.T) {
	d, a := pair(t)
	c := New(d, "tcp")
	_ = a.Close()
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read = %d %v, want io.EOF", n, err)
	}
}

// TestDeadlines: a deadline passed before or during a read or write fails
// it as the net.Conn's would.
func TestDeadlines(t *testing.T) {
	d, _ := pair(t)
	d2, _ := pair(t)
	c := New(d, "tcp")
	buf := make([]byte, 8)

	// Already past.
	_ = d.SetReadDeadline(time.Now().Add(-time.Second))
	_ = d2.SetReadDeadline(time.Now().Add(-time.Second))
	_, got := c.Read(buf)
	_, want := d2.Read(buf)
	sameError(t, swapAddrs(got, d, d2), want)

	// Passing while waiting.
	_ = d.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_ = d2.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, got = c.Read(buf)
	_, want = d2.Read(buf)
	sameError(t, swapAddrs(got, d, d2), want)

	// A write that waits for room past its deadline.
	// Nothing reads the peers, so the writes fill the socket buffers
	// and wait.
	big := make([]byte, 64<<20)
	_ = d.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	n, got := c.Write(big)
	_ = d2.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	n2, want := d2.Write(big)
	if n >= len(big) || n2 >= len(big) {
		t.Fatalf("timed-out writes wrote %d and %d of %d", n, n2, len(big))
	}
	sameError(t, swapAddrs(got, d, d2), want)
}

func TestClosed(t *testing.T) {
	d, _ := pair(t)
	d2, _ := pair(t)
	c := New(d, "tcp")
	_ = d.Close()
	_ = d2.Close()
	_, got := c.Read(make([]byte, 8))
	_, want := d2.Read(make([]byte, 8))
	sameError(t, swapAddrs(got, d, d2), want)
	_, got = c.Write([]byte("x"))
	_, want = d2.Write([]byte("x"))
	sameError(t, swapAddrs(got, d, d2), want)
}

// TestCloseDuringRead: closing the socket ends a read waiting on it.
func TestCloseDuringRead(t *testing.T) {
	d, _ := pair(t)
	c := New(d, "tcp")
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = d.Close()
	}()
	_, err := c.Read(make([]byte, 8))
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read = %v, want net.ErrClosed", err)
	}
}

// TestReset: a peer's reset fails the read with ECONNRESET, and a write
// after it fails, as on the net.Conn.
func TestReset(t *testing.T) {
	d, a := pair(t)
	d2, a2 := pair(t)
	c := New(d, "tcp")
	for _, p := range []*net.TCPConn{a, a2} {
		_ = p.SetLinger(0)
		_ = p.Close()
	}
	time.Sleep(20 * time.Millisecond)
	_, got := c.Read(make([]byte, 8))
	_, want := d2.Read(make([]byte, 8))
	sameError(t, swapAddrs(got, d, d2), want)
	if !errors.Is(got, syscall.ECONNRESET) {
		t.Fatalf("Read = %v, want ECONNRESET", got)
	}
	_, got = c.Write([]byte("x"))
	_, want = d2.Write([]byte("x"))
	sameError(t, swapAddrs(got, d, d2), want)
	v, v2 := net.Buffers{[]byte("x")}, net.Buffers{[]byte("x")}
	_, got = c.WriteBuffers(&v)
	_, want = v2.WriteTo(d2)
	sameError(t, swapAddrs(got, d, d2), want)
}

// swapAddrs returns err with the addresses of from's socket replaced by
// those of to's, so that errors of two sockets compare as text.
func swapAddrs(err error, from, to *net.TCPConn) error {
	var oe *net.OpError
	if !errors.As(err, &oe) {
		return err
	}
	if oe.Source != nil && oe.Source.String() != from.LocalAddr().String() || oe.Addr.String() != from.RemoteAddr().String() {
		return err
	}
	cp := *oe
	if cp.Source != nil {
		cp.Source = to.LocalAddr()
	}
	cp.Addr = to.RemoteAddr()
	return &cp
}
