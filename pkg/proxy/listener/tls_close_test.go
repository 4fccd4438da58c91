package listener

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// closeRecorder is a filter chain that reads until the read fails, closes
// the connection and reports what Close returned.
type closeRecorder struct{ closed chan<- error }

func (h closeRecorder) HandleConn(c net.Conn) {
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	h.closed <- c.Close()
}

// rawRecorder is a connection that keeps every byte read through it.
type rawRecorder struct {
	net.Conn
	got []byte
}

func (r *rawRecorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.got = append(r.got, p[:n]...)
	return n, err
}

// recordTypes lists the content types of the TLS records in b.
func recordTypes(b []byte) []byte {
	var types []byte
	for len(b) >= 5 {
		types = append(types, b[0])
		n := 5 + int(b[3])<<8 + int(b[4])
		if n > len(b) {
			break
		}
		b = b[n:]
	}
	return types
}

func TestTLSCloseAfterPeerReset(t *testing.T) {
	closed := make(chan error, 1)
	addr := serveTLS(t, "", closeRecorder{closed: closed})
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test is about closing
	wait := func() error {
		t.Helper()
		select {
		case err := <-closed:
			return err
		case <-time.After(ioTimeout):
			t.Fatal("the connection was not closed")
			return nil
		}
	}

	// A client that resets the connection after its handshake: there is
	// no one left to send close_notify to, and closing is no error.
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if err := tls.Client(c, cfg).Handshake(); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
	if err := wait(); err != nil {
		t.Errorf("closing a connection its peer reset: %v", err)
	}

	// A client that ends its side cleanly still gets the server's
	// close_notify alert (TLS 1.2, whose alerts have a record type of
	// their own).
	c, err = net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	raw := &rawRecorder{Conn: c}
	cfg12 := cfg.Clone()
	cfg12.MaxVersion = tls.VersionTLS12
	tc := tls.Client(raw, cfg12)
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	handshakeBytes := len(raw.got)
	if err := tc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Errorf("closing a connection its peer ended: %v", err)
	}
	if _, err := io.ReadAll(tc); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("reading to the end: %v", err)
	}
	const alert = 21
	if types := recordTypes(raw.got[handshakeBytes:]); len(types) == 0 || types[len(types)-1] != alert {
		t.Errorf("records after the handshake %v, want a close_notify alert (%d) last", types, alert)
	}
}

// lineEcho answers each read with what it read, until the read fails.
type lineEcho struct{}

func (lineEcho) HandleConn(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

func TestTLSConnectTimeoutEndsWithTheHandshake(t *testing.T) {
	const timeout = 200 * time.Millisecond
	addr := serveTLS(t, "transport_socket_connect_timeout: 0.2s, ", lineEcho{})
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test is about the timeout
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	// The timeout bounds the handshake only: an idle connection outlives
	// it.
	time.Sleep(2 * timeout)
	if _, err := tc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(tc, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q, %v after the connect timeout passed", buf, err)
	}

	// A client that never says hello is ended at the timeout.
	idle, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_ = idle.SetDeadline(time.Now().Add(ioTimeout))
	if n, err := idle.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, %v: the silent connection was not ended", n, err)
	}
}
