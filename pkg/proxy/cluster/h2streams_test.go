package cluster

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// frame builds an HTTP/2 frame.
func frame(typ, flags byte, payload []byte) []byte {
	b := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	return append(b, payload...)
}

// setting is one SETTINGS entry.
func setting(id uint16, v uint32) []byte {
	b := make([]byte, 6)
	binary.BigEndian.PutUint16(b, id)
	binary.BigEndian.PutUint32(b[2:], v)
	return b
}

// fakeConn reads from a fixed stream.
type fakeConn struct {
	net.Conn
	r io.Reader
}

func (f fakeConn) Read(p []byte) (int, error) { return f.r.Read(p) }

func TestStreamCapRewritesSettings(t *testing.T) {
	data := bytes.Join([][]byte{
		// The server's first SETTINGS, without a stream limit: no limit.
		frame(h2FrameSettings, 0, setting(0x4, 65535)),
		frame(0x0, 0x1, []byte("hello")), // DATA passes as it is
		frame(h2FrameSettings, h2FlagAck, nil),
		// A lower limit than the cap stays, a higher one is capped.
		frame(h2FrameSettings, 0, setting(h2SettingMaxStreams, 3)),
		// A later SETTINGS without the setting keeps the server's 3.
		frame(h2FrameSettings, 0, setting(0x1, 4096)),
		frame(h2FrameSettings, 0, append(setting(0x1, 4096), setting(h2SettingMaxStreams, 1000)...)),
	}, nil)
	c := newStreamCapConn(fakeConn{r: iotestOneByte(bytes.NewReader(data))}, 10, nil)
	got, err := io.ReadAll(readerOf(c))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join([][]byte{
		frame(h2FrameSettings, 0, append(setting(0x4, 65535), setting(h2SettingMaxStreams, 10)...)),
		frame(0x0, 0x1, []byte("hello")),
		frame(h2FrameSettings, h2FlagAck, nil),
		frame(h2FrameSettings, 0, setting(h2SettingMaxStreams, 3)),
		frame(h2FrameSettings, 0, append(setting(0x1, 4096), setting(h2SettingMaxStreams, 3)...)),
		frame(h2FrameSettings, 0, append(setting(0x1, 4096), setting(h2SettingMaxStreams, 10)...)),
	}, nil)
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%x\nwant\n%x", got, want)
	}
}

// iotestOneByte returns a reader that reads one byte at a time, so frames
// arrive split across reads.
func iotestOneByte(r io.Reader) io.Reader { return oneByte{r} }

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// readerOf adapts a conn to io.Reader for io.ReadAll.
func readerOf(c net.Conn) io.Reader { return readFunc(c.Read) }

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// TestHTTP2MaxConcurrentStreams: with max_concurrent_streams 1 on the
// cluster, three requests in flight at once take three connections,
// although the server allows many streams on one.
func TestHTTP2MaxConcurrentStreams(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	release := make(chan struct{})
	arrivals := make(chan struct{}, 3)
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		ReadHeaderTimeout: 5 * time.Second,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 100},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrivals <- struct{}{}
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			fmt.Fprint(w, "ok")
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	m, _, _ := newTestManager(t, fmt.Sprintf(`
- name: h2
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {max_concurrent_streams: 1, initial_stream_window_size: 65536, initial_connection_window_size: 1048576}}
  load_assignment:
    cluster_name: h2
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, ln.Addr().(*net.TCPAddr).Port))
	c := m.Cluster("h2")
	h := c.PickHost(nil)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	// Each request starts once the one before is at the server, so the
	// connection it would share has read the server's SETTINGS (see
	// compat.md: a burst on a connection still opening may share it).
	for range 3 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/", nil)
			resp, err := c.RoundTripHTTP2(req, h)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if !strings.Contains(string(b), "ok") {
				errs <- fmt.Errorf("body %q", b)
			}
		})
		select {
		case <-arrivals:
		case <-time.After(10 * time.Second):
			t.Fatalf("a request did not reach the server (%d connections)", conns.Load())
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := conns.Load(); got != 3 {
		t.Errorf("the server saw %d connections, want 3 (one stream each)", got)
	}
}
