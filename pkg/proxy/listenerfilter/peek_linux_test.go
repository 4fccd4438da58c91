package listenerfilter

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestPeekWaitsThenDiscardConsumesExactly(t *testing.T) {
	client, server := tcpPair(t)
	s := NewSocket(server)
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_, _ = client.Write([]byte("HEAD"))
		time.Sleep(50 * time.Millisecond)
		_, _ = client.Write([]byte("ER|body"))
	}()
	buf := make([]byte, 64)
	n, err := s.Peek(buf, 7)
	if err != nil || n < 7 || string(buf[:7]) != "HEADER|" {
		t.Fatalf("Peek = %d %q, %v; want at least HEADER|", n, buf[:n], err)
	}
	if err := s.Discard(7); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, 4)
	if _, err := io.ReadFull(server, rest); err != nil || string(rest) != "body" {
		t.Fatalf("after Discard read %q, %v; want body", rest, err)
	}
}

func TestPeekEOFAfterPartialData(t *testing.T) {
	client, server := tcpPair(t)
	s := NewSocket(server)
	_ = server.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = client.Write([]byte("PRO"))
	_ = client.(*net.TCPConn).CloseWrite()
	if _, err := s.Peek(make([]byte, 16), 10); !errors.Is(err, io.EOF) {
		t.Fatalf("Peek error %v, want io.EOF", err)
	}
}

func TestPeekTimeout(t *testing.T) {
	_, server := tcpPair(t)
	s := NewSocket(server)
	_ = server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := s.Peek(make([]byte, 16), 1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Peek error %v, want the deadline", err)
	}
}

func TestAddresses(t *testing.T) {
	_, server := tcpPair(t)
	s := NewSocket(server)
	if s.Restored() || s.RemoteAddr().String() != server.RemoteAddr().String() {
		t.Fatal("a new socket does not carry the connection's addresses")
	}
	a := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 1}
	s.SetRemoteAddr(a)
	if !s.Restored() || s.RemoteAddr() != a || s.LocalAddr().String() != server.LocalAddr().String() {
		t.Fatal("SetRemoteAddr did not restore only the remote address")
	}
}
