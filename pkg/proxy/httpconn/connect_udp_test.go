package httpconn

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/capsule"
)

func TestConnectUDPTarget(t *testing.T) {
	for path, want := range map[string]string{
		"/.well-known/masque/udp/example.com/443/":      "example.com:443",
		"/.well-known/masque/udp/192.0.2.6/53/":         "192.0.2.6:53",
		"/.well-known/masque/udp/2001:db8::42/53/":      "[2001:db8::42]:53",
		"/.well-known/masque/udp/2001%3Adb8%3A%3A1/53/": "[2001:db8::1]:53",
		"/.well-known/masque/udp/a%2Db/7/":              "a-b:7",
		"/.well-known/masque/udp/fe80::a%25ee1/80/":     "",
		"/.well-known/masque/udp//80/":                  "",
		"/.well-known/masque/udp/h//":                   "",
		"/.well-known/masque/udp/h/80":                  "",
		"/.well-known/masque/udp/h/80/x":                "",
		"/.well-known/masque/udp/h/80/x/":               "",
		"/masque/udp/h/80/":                             "",
		"/.well-known/masque/udp/h\x7f/80/":             "",
		"/.well-known/masque/udp/h%zz/80/":              "",
		"/.well-known/masque/udp/has space/80/":         "",
		"/.well-known/masque/udp/example.com/https/":    "example.com:https",
	} {
		got, ok := connectUDPTarget(path)
		if ok != (want != "") || got != want {
			t.Errorf("connectUDPTarget(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}

// udpPair is a UDP server and a udpTunnelSide connected to it.
func udpPair(t *testing.T) (*net.UDPConn, *udpTunnelSide) {
	t.Helper()
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c, err := net.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return srv, &udpTunnelSide{conn: c, buf: make([]byte, maxUDPPayload+1)}
}

func TestUDPTunnelSide(t *testing.T) {
	srv, side := udpPair(t)
	// Capsules written, in pieces, become datagrams to the host.
	stream := capsule.AppendDatagram(nil, []byte("one"))
	stream = append(stream, 0x21, 0x01, 'x') // another type: skipped
	stream = capsule.AppendDatagram(stream, []byte("two"))
	for _, piece := range [][]byte{stream[:4], stream[4:9], stream[9:]} {
		if n, err := side.Write(piece); err != nil || n != len(piece) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	buf := make([]byte, 100)
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	var from *net.UDPAddr
	for _, want := range []string{"one", "two"} {
		n, addr, err := srv.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("host read %q, %v; want %q", buf[:n], err, want)
		}
		from = addr
	}
	// The host's datagram comes back as one capsule, read in pieces as
	// small as the reader asks.
	if _, err := srv.WriteToUDP([]byte("back"), from); err != nil {
		t.Fatal(err)
	}
	_ = side.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	want := capsule.AppendDatagram(nil, []byte("back"))
	for len(got) < len(want) {
		small := make([]byte, 3)
		n, err := side.Read(small)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, small[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Read = %x, want %x", got, want)
	}
	// An incomplete capsule at the client's end of stream closes the
	// socket; a malformed one fails the write.
	if _, err := side.Write([]byte{0x00, 0x05, 0x00}); err != nil {
		t.Fatal(err)
	}
	if err := side.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := side.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after CloseWrite with a partial capsule: %v, want closed", err)
	}
	_, side2 := udpPair(t)
	if _, err := side2.Write([]byte{0x00, 0x00}); err == nil {
		t.Fatal("a DATAGRAM capsule without context ID written without error")
	}
	if err := side2.CloseWrite(); err != nil {
		t.Fatal(err)
	}
}

func TestUDPTunnelSideEndsWithHTTP1Client(t *testing.T) {
	_, side := udpPair(t)
	side.endWithClient = true
	if err := side.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := side.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after an HTTP/1.1 client's end: %v, want closed", err)
	}
}
