package httpconn

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// spliceLogFormat is the access log of the splice tests.
const spliceLogFormat = "%REQ(:METHOD)% %RESPONSE_CODE% flags=%RESPONSE_FLAGS% details=%RESPONSE_CODE_DETAILS% tx=%BYTES_SENT%\n"

// textLog is one file access log with format, written to path.
func textLog(path, format string) []*accesslogv3.AccessLog {
	tc := typed(&filev3.FileAccessLog{Path: path, AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
		Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
			Specifier: &corev3.DataSource_InlineString{InlineString: format},
		}},
	}}})
	return []*accesslogv3.AccessLog{{Name: "envoy.access_loggers.file", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: tc}}}
}

// patterned is n bytes that differ from one offset to the next, so that a
// lost, repeated or reordered piece shows.
func patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	return b
}

// sizedUpstream answers GET /<n> (and HEAD) with an n-byte patterned body
// of known length (chunked: in one chunk, of unknown length), on
// keep-alive connections; fn, if set, replaces the body's writing (to cut
// or stall it).
func sizedUpstream(t testing.TB, chunked bool, fn func(c net.Conn, body []byte)) string {
	return rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		for {
			head := readRequestHead(r)
			if head == "" {
				return
			}
			method, rest, _ := strings.Cut(head, " ")
			target, _, _ := strings.Cut(rest, " ")
			n, err := strconv.Atoi(strings.TrimPrefix(target, "/"))
			if err != nil {
				return
			}
			body := patterned(n)
			framing := fmt.Sprintf("Content-Length: %d\r\n\r\n", n)
			if chunked {
				framing = fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n", n)
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\n"+framing); err != nil {
				return
			}
			switch {
			case method == "HEAD":
			case fn != nil:
				fn(c, body)
				return
			default:
				if _, err := c.Write(body); err != nil {
					return
				}
			}
		}
	})
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// dialCounting is dialTest with what the client reads counted.
func dialCounting(t *testing.T, addr string) (net.Conn, *countingReader, *bufio.Reader) {
	t.Helper()
	c, _ := dialTest(t, addr)
	counted := &countingReader{r: c}
	return c, counted, bufio.NewReader(counted)
}

// TestSplicedResponseBodies relays bodies of known length larger than the
// read buffers, which move between the sockets without the proxy's
// buffers, and smaller ones and a HEAD, which do not, on one keep-alive
// connection: every byte arrives in order, the framing leaves the
// connections reusable (one upstream connection for all), and the access
// log's bytes sent and downstream_cx_tx_bytes_total count every byte.
func TestSplicedResponseBodies(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, sizedUpstream(t, false, nil))
	p, log := spliceProxy(t, st, cl, spliceLogFormat, 0)

	c, counted, r := dialCounting(t, p.addr)
	sizes := []int{1 << 20, 100, 64 << 10, 16<<10 + 1, 3<<20 + 17, 40 << 10}
	var want strings.Builder
	for _, n := range sizes {
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: h\r\n\r\n", n)
		resp, err := http.ReadResponse(r, &http.Request{Method: "GET"})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%d bytes: reading the body: %v", n, err)
		}
		if resp.ContentLength != int64(n) || !bytes.Equal(got, patterned(n)) {
			t.Fatalf("%d bytes: got content-length %d and %d bytes, not the upstream's body", n, resp.ContentLength, len(got))
		}
		fmt.Fprintf(&want, "GET 200 flags=- details=via_upstream tx=%d\n", n)
	}
	fmt.Fprintf(c, "HEAD /%d HTTP/1.1\r\nHost: h\r\n\r\n", 1<<20)
	resp, err := http.ReadResponse(r, &http.Request{Method: "HEAD"})
	if err != nil || resp.ContentLength != 1<<20 {
		t.Fatalf("HEAD: %v, content-length %d", err, resp.ContentLength)
	}
	want.WriteString("HEAD 200 flags=- details=via_upstream tx=0\n")
	p.waitCounter(t, "http.test.downstream_rq_completed", uint64(len(sizes)+1))
	if r.Buffered() != 0 {
		t.Errorf("%d bytes beyond the responses", r.Buffered())
	}
	eventually(t, "the access log", func() bool { return log.String() == want.String() })
	if got, sent := p.counter("http.test.downstream_cx_tx_bytes_total"), counted.n.Load(); got != uint64(sent) {
		t.Errorf("downstream_cx_tx_bytes_total = %d, the client read %d", got, sent)
	}
	if d := cl.dials.Load(); d != 1 {
		t.Errorf("%d upstream connections, want 1 reused for every response", d)
	}
}

// TestSplicedResponseBodyFailures cuts a large body of known length once
// it moves between the sockets: the upstream closing, the upstream
// stalling past the stream idle timeout (also with a rest short enough to
// be read into the client's output buffer), and the client leaving. Each is
// told apart (Envoy's flags and details) as the copy of a chunked body
// tells it.
func TestSplicedResponseBodyFailures(t *testing.T) {
	cases := []struct {
		name string
		// size is the body's (default: 8 MiB).
		size int
		// upstream writes (part of) the body.
		upstream func(c net.Conn, body []byte)
		// client reads the response, or leaves.
		client  func(t *testing.T, c *rawConn)
		logLine string
		// stalls is set where the stream idle timeout must end the
		// stream: it is then short (stallIdleMS), and otherwise long
		// enough that a loaded machine's slow response head never
		// meets it (a 504 before the body is not the case tested).
		stalls bool
	}{{
		name: "upstream closes",
		upstream: func(c net.Conn, body []byte) {
			_, _ = c.Write(body[:300<<10])
		},
		client:  readTruncated,
		logLine: `^GET 200 flags=UC details=upstream_reset_after_response_started\{connection_termination\} tx=307200$`,
	}, {
		name: "upstream stalls",
		upstream: func(c net.Conn, body []byte) {
			_, _ = c.Write(body[:300<<10])
			_, _ = c.Read(make([]byte, 1)) // until the proxy closes
		},
		client:  readTruncated,
		logLine: `^GET 200 flags=SI details=stream_idle_timeout tx=307200$`,
		stalls:  true,
	}, {
		name: "upstream stalls near the end",
		size: 20 << 10,
		upstream: func(c net.Conn, body []byte) {
			_, _ = c.Write(body[:17<<10])
			_, _ = c.Read(make([]byte, 1))
		},
		client:  readTruncated,
		logLine: `^GET 200 flags=SI details=stream_idle_timeout tx=17408$`,
		stalls:  true,
	}, {
		name: "client leaves",
		upstream: func(c net.Conn, body []byte) {
			_, _ = c.Write(body)
		},
		client: func(t *testing.T, c *rawConn) {
			if _, err := c.r.Peek(1); err != nil {
				t.Fatal(err)
			}
			// A reset, so that the proxy's next write fails at once.
			_ = c.Conn.(*net.TCPConn).SetLinger(0)
			c.Close()
		},
		logLine: `^GET 200 flags=DC details=via_upstream tx=\d+$`,
	}}
	for _, tc := range cases {
		for _, chunked := range []bool{false, true} {
			name := tc.name
			if chunked {
				// Not spliced: the copy tells them apart alike.
				name += "/chunked"
			}
			t.Run(name, func(t *testing.T) {
				st := stats.NewStore()
				cl := newFakeCluster(st, "up", false, sizedUpstream(t, chunked, tc.upstream))
				idle := int(testTimeout / time.Millisecond)
				if tc.stalls {
					idle = stallIdleMS
				}
				p, log := spliceProxy(t, st, cl, spliceLogFormat, idle)
				c := dialRaw(t, p.addr)
				size := cmp.Or(tc.size, 8<<20)
				c.send(fmt.Sprintf("GET /%d HTTP/1.1\r\nHost: h\r\n\r\n", size))
				tc.client(t, c)
				waitLogLine(t, log, tc.logLine)
			})
		}
	}
}

// stallIdleMS is the stream idle timeout of the splice tests whose
// upstream stalls, in milliseconds: each such case lasts that long, and the
// response's head must arrive before it (it did not at 300 ms under a load
// average of 40).
const stallIdleMS = 1500

// readTruncated reads a response whose body breaks off: the head, then
// the connection ends before the body does.
func readTruncated(t *testing.T, c *rawConn) {
	t.Helper()
	resp, err := http.ReadResponse(c.r, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	// A chunked body breaks off without its last chunk, one of known
	// length short of it: both are errors.
	if n, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Fatalf("read %d bytes (content-length %d): the body did not break off", n, resp.ContentLength)
	}
}

// spliceProxy starts a proxy that routes everything to cl, named "up",
// logging each request to the returned buffer in format; streamIdle, when
// not 0, is the stream idle timeout in milliseconds.
func spliceProxy(t *testing.T, st *stats.Store, cl *fakeCluster, format string, streamIdle int) (*proxy, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	cfg := hcm(routeConfig(clusterRoute("/", "up")))
	if streamIdle > 0 {
		cfg.StreamIdleTimeout = ms(streamIdle)
	}
	cfg.AccessLog = textLog("log", format)
	return startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}, AccessLogs: logTo(log)}), log
}

// waitLogLine waits until the access log's last line matches pattern, or
// fails the test.
func waitLogLine(t *testing.T, log *syncBuffer, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.Now().Add(testTimeout)
	for !re.MatchString(strings.TrimSuffix(log.String(), "\n")) {
		if time.Now().After(deadline) {
			t.Fatalf("access log %q, want a line matching %s", log.String(), re)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
