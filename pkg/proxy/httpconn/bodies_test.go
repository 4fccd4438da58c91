package httpconn

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"strings"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// TestLargeBodies streams a body bigger than every buffer both ways, with
// a length and chunked, over each downstream protocol, and checks that
// every byte arrives.
func TestLargeBodies(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuv"), 1<<15) // 1 MiB
	want := sha256.Sum256(payload)
	p := protocolProxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	for name, c := range map[string]*http.Client{"http/1.1": client(), "h2c": h2cClient()} {
		for _, upstream := range []string{"/h1", "/h2"} {
			for _, chunked := range []bool{false, true} {
				label := name + upstream
				if chunked {
					label += "/unknown length"
				}
				t.Run(label, func(t *testing.T) {
					defer c.CloseIdleConnections()
					var body io.Reader = bytes.NewReader(payload)
					if chunked {
						// Hiding the length makes the client stream it.
						body = io.MultiReader(body)
					}
					req, err := http.NewRequest("POST", p.url(upstream+"/big"), body)
					if err != nil {
						t.Fatal(err)
					}
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					got := readAll(t, resp)
					_, echoed, ok := strings.Cut(got, "\n\n")
					if resp.StatusCode != 200 || !ok {
						t.Fatalf("status %d, body of %d bytes", resp.StatusCode, len(got))
					}
					if sha256.Sum256([]byte(echoed)) != want {
						t.Fatalf("echoed body of %d bytes differs from the %d bytes sent", len(echoed), len(payload))
					}
				})
			}
		}
	}
}

// TestHTTP2LocalReplyKeepsConnection checks that a local reply to an
// HTTP/2 request whose body was never read costs only the stream, not the
// connection (no GOAWAY), unlike HTTP/1 where the body's bytes are in the
// way.
func TestHTTP2LocalReplyKeepsConnection(t *testing.T) {
	p := startProxy(t, hcm(routeConfig(directRoute("/d", 200, "hi"))), Deps{})
	c := h2cClient()
	defer c.CloseIdleConnections()
	for i := range 3 {
		status, _, body := do(t, c, "POST", p.url("/d"), strings.NewReader(strings.Repeat("x", 100000)), nil)
		if status != 200 || body != "hi" {
			t.Fatalf("request %d: %d %q", i, status, body)
		}
	}
	if got := p.counter("http.test.downstream_cx_total"); got != 1 {
		t.Errorf("downstream_cx_total = %d, want 1: the connection was closed", got)
	}
}
