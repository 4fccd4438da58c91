package httpinspector

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	hiv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter/listenerfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// accepted starts a loopback connection, lets write send its first bytes
// from the client side and returns the server side for the listener
// filters.
func accepted(t *testing.T, write func(c net.Conn)) *listenerfilter.Socket {
	t.Helper()
	c, s := listenerfiltertest.Pair(t, 10*time.Second)
	go write(c)
	return s
}

func sending(b string) func(net.Conn) {
	return func(c net.Conn) { _, _ = c.Write([]byte(b)) }
}

func TestOnAccept(t *testing.T) {
	store := stats.NewStore()
	f, err := Factory{}.Compile(&hiv3.HttpInspector{}, listenerfilter.Context{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		write func(net.Conn)
		want  []string
	}{
		{"http/1.1", sending("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), []string{"http/1.1"}},
		{"http/1.0", sending("GET / HTTP/1.0\r\n\r\n"), []string{"http/1.0"}},
		{"h2c", sending(h2Preface), []string{"h2c"}},
		{"not http", sending("hello\x00world"), nil},
		{"byte by byte", func(c net.Conn) {
			for _, b := range []byte("GET / HTTP/1.1\r\n") {
				_, _ = c.Write([]byte{b})
				time.Sleep(time.Millisecond)
			}
		}, []string{"http/1.1"}},
		// A request line longer than the first read makes the buffer grow.
		{"long line", sending("GET /" + strings.Repeat("a", 3*initialRead) + " HTTP/1.0\r\n"), []string{"http/1.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := accepted(t, tc.write)
			if err := f.OnAccept(s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.ApplicationProtocols(), tc.want) {
				t.Errorf("application protocols %q, want %q", s.ApplicationProtocols(), tc.want)
			}
			// Nothing was consumed: the connection still starts with
			// its first byte.
			got := make([]byte, 1)
			if _, err := s.NetConn().Read(got); err != nil || !strings.ContainsRune("GPh", rune(got[0])) {
				t.Errorf("first byte %q, %v", got, err)
			}
		})
	}

	// 64 KiB without a newline closes the connection.
	s := accepted(t, sending("GET /"+strings.Repeat("a", maxInspect)))
	if err := f.OnAccept(s); !errors.Is(err, listenerfilter.ErrRejected) {
		t.Errorf("too long: %v", err)
	}

	// A TLS connection is not inspected.
	s = accepted(t, sending("GET / HTTP/1.1\r\n"))
	s.SetDetectedTransportProtocol("tls")
	if err := f.OnAccept(s); err != nil || s.ApplicationProtocols() != nil {
		t.Errorf("tls: %v, %q", err, s.ApplicationProtocols())
	}

	for name, want := range map[string]uint64{
		"http11_found": 2, "http10_found": 2, "http2_found": 1, "http_not_found": 1, "read_error": 1,
	} {
		if got := store.Counter("http_inspector." + name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
