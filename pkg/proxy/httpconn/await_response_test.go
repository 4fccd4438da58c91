package httpconn

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// lentBuffers is an upstream.ReadBuffers over one connection that counts
// the buffers it lends and takes back, and notes one taken back with
// bytes in it (which would lose them).
type lentBuffers struct {
	conn             net.Conn
	size             int
	gets, puts, lost *atomic.Int32
}

func (b *lentBuffers) ResponseReader() *bufio.Reader {
	b.gets.Add(1)
	return bufio.NewReaderSize(b.conn, b.size)
}

func (b *lentBuffers) PutReader(r *bufio.Reader) {
	b.puts.Add(1)
	if r.Buffered() != 0 {
		b.lost.Add(1)
	}
}

// getOn sends GET /target on c and reads the response through r.
func getOn(t *testing.T, c net.Conn, r *bufio.Reader, target string) (*http.Response, []byte) {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", target)
	resp, err := http.ReadResponse(r, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", target, err)
	}
	return resp, body
}

// dialTest connects to the proxy with the test's deadline.
func dialTest(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	return c, bufio.NewReader(c)
}

// TestAwaitedResponseBuffers: a request without a body waits for its
// response without a read buffer and reads it with one taken once the
// response is readable (here 32 KiB, as the cluster's): responses around
// 16 KiB with their heads, smaller and larger ones arrive whole on one
// reused upstream connection, each exchange gives back the buffer it was
// lent with and takes one, and no buffer goes back holding bytes; the
// bodies read whole with their heads leave beside the head (writev) and
// downstream_cx_tx_bytes_total counts every byte the client read.
func TestAwaitedResponseBuffers(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, sizedUpstream(t, false, nil))
	var gets, puts, lost atomic.Int32
	cl.buffers = func(nc net.Conn) upstream.ReadBuffers {
		return &lentBuffers{conn: nc, size: 32 << 10, gets: &gets, puts: &puts, lost: &lost}
	}
	p, log := spliceProxy(t, st, cl, spliceLogFormat, 0)
	c, counted, r := dialCounting(t, p.addr)
	// Around pairMin and up to a buffer's worth, the body is written
	// beside the head, not copied behind it (outBuf.writeLast).
	sizes := []int{16 << 10, 100, 16<<10 + 1, 32 << 10, 0, 200 << 10, 16 << 10, pairMin - 1, pairMin, 30 << 10}
	var want strings.Builder
	for _, n := range sizes {
		resp, body := getOn(t, c, r, fmt.Sprintf("/%d", n))
		if resp.StatusCode != 200 || !bytes.Equal(body, patterned(n)) {
			t.Fatalf("%d bytes: status %d, %d bytes, not the upstream's body", n, resp.StatusCode, len(body))
		}
		fmt.Fprintf(&want, "GET 200 flags=- details=via_upstream tx=%d\n", n)
	}
	eventually(t, "the access log", func() bool { return log.String() == want.String() })
	if r.Buffered() != 0 {
		t.Errorf("%d bytes beyond the responses", r.Buffered())
	}
	if got, sent := p.counter("http.test.downstream_cx_tx_bytes_total"), counted.n.Load(); got != uint64(sent) {
		t.Errorf("downstream_cx_tx_bytes_total = %d, the client read %d", got, sent)
	}
	if d := cl.dials.Load(); d != 1 {
		t.Errorf("%d upstream connections, want 1 reused for every response", d)
	}
	if g, p := gets.Load(), puts.Load(); g != int32(len(sizes)) || p != int32(len(sizes)) {
		t.Errorf("buffers taken %d and given back %d times, want %d each (one per response)", g, p, len(sizes))
	}
	if n := lost.Load(); n > 0 {
		t.Errorf("%d buffers given back holding bytes", n)
	}
}

// TestAwaitedResponses: the wait for a response without the read before
// it still sees everything that ends or delays it: an upstream that closed
// its pooled connection after the previous response (the request is sent
// again on a new connection, as when the read finds the end of the stream
// at once), a response that comes in pieces, request bodies that leave
// with their heads or in pieces, and the route timeout firing during the
// wait, with and without a body.
func TestAwaitedResponses(t *testing.T) {
	t.Run("upstream closes after each response", func(t *testing.T) {
		st := stats.NewStore()
		addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
			if readRequestHead(r) == "" {
				return
			}
			// No Connection: close: the pool keeps the connection,
			// which is closed when it is next lent.
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		})
		cl := newFakeCluster(st, "up", false, addr)
		p, log := spliceProxy(t, st, cl, spliceLogFormat, 0)
		c, r := dialTest(t, p.addr)
		const n = 5
		for i := range n {
			resp, body := getOn(t, c, r, "/")
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("request %d: status %d, body %q", i, resp.StatusCode, body)
			}
		}
		want := strings.Repeat("GET 200 flags=- details=via_upstream tx=2\n", n)
		eventually(t, "the access log", func() bool { return log.String() == want })
		if d := cl.dials.Load(); d != n {
			t.Errorf("%d upstream connections, want %d (one per request)", d, n)
		}
	})
	t.Run("response in pieces", func(t *testing.T) {
		st := stats.NewStore()
		body := patterned(20 << 10)
		addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
			for readRequestHead(r) != "" {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n", len(body))
				time.Sleep(10 * time.Millisecond)
				_, _ = io.WriteString(c, "\r\n")
				_, _ = c.Write(body[:7000])
				time.Sleep(10 * time.Millisecond)
				_, _ = c.Write(body[7000:])
			}
		})
		cl := newFakeCluster(st, "up", false, addr)
		p, _ := spliceProxy(t, st, cl, spliceLogFormat, 0)
		c, r := dialTest(t, p.addr)
		for i := range 3 {
			resp, got := getOn(t, c, r, "/")
			if resp.StatusCode != 200 || !bytes.Equal(got, body) {
				t.Fatalf("request %d: status %d, %d bytes, not the upstream's body", i, resp.StatusCode, len(got))
			}
		}
		if d := cl.dials.Load(); d != 1 {
			t.Errorf("%d upstream connections, want 1", d)
		}
	})
	t.Run("request bodies", func(t *testing.T) {
		// The upstream answers with the length and CRC-32 of the body
		// it read: a body that came whole with its head leaves with it
		// in one write and its response is awaited; a larger one is
		// sent in pieces and read for as before.
		st := stats.NewStore()
		cl := newFakeCluster(st, "up", false, crcUpstream(t))
		p, _ := spliceProxy(t, st, cl, spliceLogFormat, 0)
		c, r := dialTest(t, p.addr)
		for _, n := range []int{1, 100, 4000, 40 << 10, 0, 7000} {
			body := patterned(n)
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", n)
			_, _ = c.Write(body)
			resp, err := http.ReadResponse(r, &http.Request{Method: "POST"})
			if err != nil {
				t.Fatalf("POST of %d bytes: %v", n, err)
			}
			got, _ := io.ReadAll(resp.Body)
			if want := fmt.Sprintf("%d %08x", n, crc32.ChecksumIEEE(body)); resp.StatusCode != 200 || string(got) != want {
				t.Fatalf("POST of %d bytes: status %d, upstream read %q, want %q", n, resp.StatusCode, got, want)
			}
		}
		if d := cl.dials.Load(); d != 1 {
			t.Errorf("%d upstream connections, want 1", d)
		}
	})
	t.Run("route timeout during the wait", func(t *testing.T) {
		st := stats.NewStore()
		addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
			_, _ = io.Copy(io.Discard, r) // no answer, until the proxy closes
		})
		cl := newFakeCluster(st, "up", false, addr)
		log := &syncBuffer{}
		cfg := hcm(routeConfig(clusterRoute("/", "up", withTimeout(100*time.Millisecond))))
		cfg.AccessLog = textLog("log", spliceLogFormat)
		p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}, AccessLogs: logTo(log)})
		c, r := dialTest(t, p.addr)
		resp, _ := getOn(t, c, r, "/")
		if resp.StatusCode != 504 {
			t.Fatalf("status %d, want 504", resp.StatusCode)
		}
		waitLogLine(t, log, `^GET 504 flags=UT details=upstream_response_timeout tx=\d+$`)
		// A body that leaves with its head: the route timeout starts
		// before that write, and fires during the wait as well.
		c, r = dialTest(t, p.addr)
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
		resp, err := http.ReadResponse(r, &http.Request{Method: "POST"})
		if err != nil || resp.StatusCode != 504 {
			t.Fatalf("POST: %v, status %v, want 504", err, resp)
		}
		waitLogLine(t, log, `(?m)^POST 504 flags=UT details=upstream_response_timeout tx=\d+$`)
	})
}

// crcUpstream answers each request with the length and CRC-32 of the
// Content-Length body it read ("%d %08x").
func crcUpstream(t *testing.T) string {
	return rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		for {
			head := readRequestHead(r)
			if head == "" {
				return
			}
			var n int
			for _, line := range strings.Split(head, "\r\n") {
				if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length: "); ok {
					n, _ = strconv.Atoi(v)
				}
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			answer := fmt.Sprintf("%d %08x", n, crc32.ChecksumIEEE(body))
			_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
		}
	})
}
