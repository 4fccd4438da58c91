package httpconn

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// spliceRecvLogFormat is the access log of the request splice tests.
const spliceRecvLogFormat = "%REQ(:METHOD)% %RESPONSE_CODE% flags=%RESPONSE_FLAGS% details=%RESPONSE_CODE_DETAILS% rx=%BYTES_RECEIVED%\n"

// bodyUpstream reads requests on keep-alive connections and answers each
// with the length and CRC-32 of the body it read; fn, if set, handles the
// request instead (to stop reading, or close).
func bodyUpstream(t testing.TB, fn func(c net.Conn, req *http.Request)) string {
	return rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			if fn != nil {
				fn(c, req)
				return
			}
			h := crc32.NewIEEE()
			n, err := io.Copy(h, req.Body)
			if err != nil {
				return
			}
			answer := fmt.Sprintf("%d %08x", n, h.Sum32())
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer); err != nil {
				return
			}
		}
	})
}

// countingWriter counts what is written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// TestSplicedRequestBodies sends request bodies of known length larger
// than the read buffers, whose rest moves between the sockets without
// the proxy's buffers, and smaller ones, which do not, on one keep-alive
// connection: the upstream reads every byte in order, the connections
// stay reusable (one upstream connection for all), and the access log's
// bytes received and downstream_cx_rx_bytes_total count every byte.
func TestSplicedRequestBodies(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, bodyUpstream(t, nil))
	p, log := spliceProxy(t, st, cl, spliceRecvLogFormat, 0)

	c, r := dialTest(t, p.addr)
	w := &countingWriter{w: c}
	sizes := []int{1 << 20, 100, 64 << 10, 16<<10 + 1, 3<<20 + 17, 40 << 10, 24 << 10}
	var want strings.Builder
	for _, n := range sizes {
		body := patterned(n)
		// The head and the body in separate writes, so that the body's
		// start may or may not arrive with the head.
		fmt.Fprintf(w, "POST /%d HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", n, n)
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, &http.Request{Method: "POST"})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%d bytes: reading the answer: %v", n, err)
		}
		if want := fmt.Sprintf("%d %08x", n, crc32.ChecksumIEEE(body)); string(got) != want {
			t.Fatalf("%d bytes: the upstream read %q, want %q", n, got, want)
		}
		fmt.Fprintf(&want, "POST 200 flags=- details=via_upstream rx=%d\n", n)
	}
	p.waitCounter(t, "http.test.downstream_rq_completed", uint64(len(sizes)))
	eventually(t, "the access log", func() bool { return log.String() == want.String() })
	if got := p.counter("http.test.downstream_cx_rx_bytes_total"); got != uint64(w.n) {
		t.Errorf("downstream_cx_rx_bytes_total = %d, the client wrote %d", got, w.n)
	}
	if d := cl.dials.Load(); d != 1 {
		t.Errorf("%d upstream connections, want 1 reused for every request", d)
	}
}

// sendBody writes a request head and up to upTo bytes of its size-byte
// body (of known length, or chunked) from its own goroutine, which stops
// at the first failed write and then closes the channel returned; the
// test's cleanup waits for it.
func sendBody(t *testing.T, c net.Conn, chunked bool, size, upTo int) <-chan struct{} {
	done := make(chan struct{})
	framing := fmt.Sprintf("Content-Length: %d", size)
	if chunked {
		framing = "Transfer-Encoding: chunked"
	}
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		defer close(done)
		if _, err := fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: h\r\n%s\r\n\r\n", framing); err != nil {
			return
		}
		piece := patterned(64 << 10)
		for sent := 0; sent < upTo; sent += len(piece) {
			p := piece[:min(len(piece), upTo-sent)]
			if chunked {
				if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(p), p); err != nil {
					return
				}
				continue
			}
			if _, err := c.Write(p); err != nil {
				return
			}
		}
	}()
	return done
}

// TestSplicedRequestBodyFailures breaks a large request body of known
// length once it moves between the sockets: the client leaving or
// stalling mid-body, the upstream closing or no longer reading. Each ends
// as the copy of a chunked body (which is never spliced) ends: the same
// status, flags and details.
func TestSplicedRequestBodyFailures(t *testing.T) {
	const size = 64 << 20
	cases := []struct {
		name string
		// upTo is how much of the body the client sends (default: all).
		upTo int
		// leave: the client closes once it has sent upTo bytes.
		leave bool
		// upstream handles the request (default: reads it all) until
		// stop is closed, when the test ends.
		upstream func(c net.Conn, req *http.Request, stop <-chan struct{})
		logLine  string
	}{{
		name:    "client leaves",
		upTo:    1 << 20,
		leave:   true,
		logLine: `^POST 400 flags=DPE details=http1\.codec_error rx=\d+$`,
	}, {
		name:    "client stalls",
		upTo:    1 << 20,
		logLine: `^POST 408 flags=SI details=stream_idle_timeout rx=\d+$`,
	}, {
		name: "upstream closes",
		upstream: func(c net.Conn, req *http.Request, _ <-chan struct{}) {
			_, _ = io.CopyN(io.Discard, req.Body, 100<<10)
			// A reset: unread bytes are still queued.
			_ = c.(*net.TCPConn).SetLinger(0)
		},
		logLine: `^POST 503 flags=UC details=upstream_reset_before_response_started\{connection_termination\} rx=\d+$`,
	}, {
		name: "upstream stops reading",
		upstream: func(_ net.Conn, _ *http.Request, stop <-chan struct{}) {
			<-stop // nothing more is read
		},
		logLine: `^POST 408 flags=SI details=stream_idle_timeout rx=\d+$`,
	}}
	for _, tc := range cases {
		for _, chunked := range []bool{false, true} {
			name := tc.name
			if chunked {
				name += "/chunked"
			}
			t.Run(name, func(t *testing.T) {
				st := stats.NewStore()
				var handle func(c net.Conn, req *http.Request)
				if tc.upstream != nil {
					stop := make(chan struct{})
					handle = func(c net.Conn, req *http.Request) { tc.upstream(c, req, stop) }
					// Runs before the upstream's cleanup, which waits
					// for its handlers.
					defer t.Cleanup(func() { close(stop) })
				}
				cl := newFakeCluster(st, "up", false, bodyUpstream(t, handle))
				p, log := spliceProxy(t, st, cl, spliceRecvLogFormat, 300)
				c, err := net.DialTimeout("tcp", p.addr, testTimeout)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				_ = c.SetDeadline(time.Now().Add(testTimeout))
				upTo := size
				if tc.upTo > 0 {
					upTo = tc.upTo
				}
				sent := sendBody(t, c, chunked, size, upTo)
				if tc.leave {
					// Once its bytes are out, the client leaves.
					<-sent
					_ = c.(*net.TCPConn).CloseWrite()
				}
				waitLogLine(t, log, tc.logLine)
			})
		}
	}
}
