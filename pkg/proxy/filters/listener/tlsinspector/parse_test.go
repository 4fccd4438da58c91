package tlsinspector

import (
	"crypto/tls"
	"net"
	"slices"
	"testing"
	"time"
)

// clientHelloBytes captures the ClientHello a Go client sends with cfg.
func clientHelloBytes(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		c := tls.Client(b, cfg)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_ = c.Handshake()
		_ = b.Close()
	}()
	var out []byte
	buf := make([]byte, 4096)
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		n, err := a.Read(buf)
		out = append(out, buf[:n]...)
		if _, need, perr := parseClientHello(out, maxClientHello); err != nil || perr != nil || need == 0 {
			return out
		}
	}
}

func TestParseClientHello(t *testing.T) {
	hello := clientHelloBytes(t, &tls.Config{ServerName: "API.Example.com", NextProtos: []string{"h2", "http/1.1"}})
	ch, need, err := parseClientHello(hello, maxClientHello)
	if err != nil || need != 0 {
		t.Fatalf("need %d, err %v", need, err)
	}
	if ch.serverName != "api.example.com" || !slices.Equal(ch.alpn, []string{"h2", "http/1.1"}) || ch.length != len(hello) {
		t.Errorf("got %+v (length of %d)", ch, len(hello))
	}
	// Every prefix asks for more, up to the whole record.
	for i := 1; i < len(hello); i++ {
		_, need, err := parseClientHello(hello[:i], maxClientHello)
		if err != nil || need <= i || need > len(hello) {
			t.Fatalf("prefix %d: need %d, err %v", i, need, err)
		}
	}
	// No SNI, no ALPN (an IP address is not sent as SNI).
	ch, _, err = parseClientHello(clientHelloBytes(t, &tls.Config{ServerName: "127.0.0.1"}), maxClientHello)
	if err != nil || ch.serverName != "" || ch.alpn != nil {
		t.Errorf("got %+v, %v", ch, err)
	}
	for name, b := range map[string][]byte{
		"http":             []byte("GET / HTTP/1.1\r\n"),
		"sslv2":            {0x80, 0x2e, 0x01},
		"not a hello":      {0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00},
		"alert":            {0x15, 0x03, 0x03},
		"empty record":     {0x16, 0x03, 0x01, 0x00, 0x00},
		"truncated fields": {0x16, 0x03, 0x01, 0x00, 0x06, 0x01, 0x00, 0x00, 0x02, 0x03, 0x03},
	} {
		if _, _, err := parseClientHello(b, maxClientHello); err != errNotTLS {
			t.Errorf("%s: %v, want not TLS", name, err)
		}
	}
	// A hello that says it is larger than 64 KiB.
	if _, _, err := parseClientHello([]byte{0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x01, 0x00, 0x01}, maxClientHello); err != errTooLarge {
		t.Errorf("too large: %v", err)
	}
}

// FuzzParseClientHello: whatever the bytes, the parser answers with a
// result, a need larger than what it has, or an error.
func FuzzParseClientHello(f *testing.F) {
	f.Add(clientHelloBytes(f, &tls.Config{ServerName: "a.example", NextProtos: []string{"h2"}}))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, need, err := parseClientHello(b, maxClientHello)
		if err == nil && need != 0 && need <= len(b) {
			t.Fatalf("need %d with %d bytes", need, len(b))
		}
	})
}
