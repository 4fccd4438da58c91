package httpconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ended waits for the manager's connections to end; the wait orders the
// test's reads of a connection's state after its goroutine's writes (end
// unregisters under the manager's lock).
func ended(t *testing.T, m *Manager) {
	t.Helper()
	waitFor(t, "the connection's end", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.conns) == 0
	})
}

// TestInlineRequests: once a keep-alive connection serves inside its
// socket's wait (see inline.go), every kind of request is still served
// whole: bodies that came with their heads, bodies that come later,
// 100-continue, heads in pieces, pipelined requests.
func TestInlineRequests(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, crcUpstream(t))
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	c := dialRaw(t, p.addr)
	check := func(what string, n int, body []byte) {
		t.Helper()
		resp, got := c.response("POST")
		if want := fmt.Sprintf("%d %08x", n, crc32.ChecksumIEEE(body)); resp.StatusCode != 200 || got != want {
			t.Fatalf("%s: status %d, upstream read %q, want %q", what, resp.StatusCode, got, want)
		}
	}
	post := func(body []byte) string {
		return fmt.Sprintf("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	check("first GET", 0, nil)
	for _, n := range []int{0, 1, 3000, 7000} {
		body := patterned(n)
		c.send(post(body))
		check(fmt.Sprintf("POST of %d bytes with its head", n), n, body)
	}
	// A body that comes after its head.
	body := patterned(5000)
	c.send(fmt.Sprintf("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", len(body)))
	time.Sleep(20 * time.Millisecond)
	c.send(string(body[:10]))
	time.Sleep(20 * time.Millisecond)
	c.send(string(body[10:]))
	check("POST whose body comes later", len(body), body)
	// A body larger than the read buffer.
	body = patterned(40 << 10)
	c.send(post(body))
	check("POST of 40 KiB", len(body), body)
	// 100-continue: the body is sent once the proxy asks for it.
	body = patterned(100)
	c.send(fmt.Sprintf("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body)))
	if line, err := c.r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("100-continue: %q, %v", line, err)
	}
	if line, _ := c.r.ReadString('\n'); line != "\r\n" {
		t.Fatalf("100-continue: %q after the status line", line)
	}
	c.send(string(body))
	check("POST with 100-continue", len(body), body)
	// A head in pieces.
	head := post(nil)
	for i := range head {
		c.send(head[i : i+1])
		if i%10 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	check("POST whose head comes a byte at a time", 0, nil)
	// Pipelined requests, the last one's body cut in two.
	b1, b2 := patterned(10), patterned(2000)
	both := post(b1) + post(b2)
	c.send(both[:len(both)-500])
	time.Sleep(20 * time.Millisecond)
	c.send(both[len(both)-500:])
	check("first pipelined POST", len(b1), b1)
	check("second pipelined POST", len(b2), b2)
	conn := onlyConn(t, p.m)
	c.Close()
	ended(t, p.m)
	if !conn.park.inline {
		t.Error("the connection did not serve inline")
	}
	if got := p.counter("http.test.downstream_rq_2xx"); got != 11 {
		t.Errorf("downstream_rq_2xx = %d, want 11", got)
	}
}

// TestInlineClientEnd: a client that ends its side with its request, or
// just after, gets its response, and the connection ends at once rather
// than at its idle timeout: a read that returns the request may take the
// FIN behind it, whose edge the netpoller may have taken too, and the
// wait after the response must not miss it (TCP_INQ reports it).
func TestInlineClientEnd(t *testing.T) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "up", false, fixedUpstream(t))
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}})
	const req = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
	for i := range 40 {
		c := dialRaw(t, p.addr)
		c.send(req)
		c.response("GET")
		conn := onlyConn(t, p.m)
		if i%2 == 0 {
			// Corked, the request and the FIN leave in one segment,
			// which one read takes whole.
			cork(t, c.Conn)
		}
		c.send(req)
		if i%4 == 1 {
			time.Sleep(time.Duration(i%5) * time.Millisecond)
		}
		if err := c.Conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if resp, body := c.response("GET"); resp.StatusCode != 200 || body != benchBody {
			t.Fatalf("connection %d: status %d, body %q", i, resp.StatusCode, body)
		}
		// The read deadline is testTimeout, far below the idle timeout.
		if _, err := c.r.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("connection %d: %v after the response, want the proxy's close", i, err)
		}
		ended(t, p.m)
		if conn.idleGen != 0 {
			// The idle set's sweep (every 250 ms) would find the end
			// the wait missed: the connection must not need it.
			t.Fatalf("connection %d went to the idle set: its wait missed the client's end", i)
		}
	}
	if got := p.counter("http.test.downstream_cx_destroy_remote"); got != 40 {
		t.Errorf("downstream_cx_destroy_remote = %d, want 40", got)
	}
}

// TestInlineCut: Shutdown's cut of a connection serving inside its
// socket's wait does not wait for the request, whose upstream never
// answers (Close would wait for the wait to end).
func TestInlineCut(t *testing.T) {
	arrived := make(chan struct{}, 1)
	stuck := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		if readRequestHead(r) != "" {
			arrived <- struct{}{}
		}
		_, _ = io.Copy(io.Discard, r)
	})
	st := stats.NewStore()
	p := startProxy(t, hcm(routeConfig(clusterRoute("/ok", "up"), clusterRoute("/", "stuck", withTimeout(0)))),
		Deps{Stats: st, Upstreams: fakeUpstreams{
			"up":    newFakeCluster(st, "up", false, fixedUpstream(t)),
			"stuck": newFakeCluster(st, "stuck", false, stuck),
		}})
	c := dialRaw(t, p.addr)
	c.send("GET /ok HTTP/1.1\r\nHost: h\r\n\r\n")
	c.response("GET")
	c.send("GET /stuck HTTP/1.1\r\nHost: h\r\n\r\n")
	select {
	case <-arrived:
	case <-time.After(testTimeout):
		t.Fatal("the request did not reach the upstream")
	}
	conn := onlyConn(t, p.m)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		done <- p.m.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want the context's deadline error", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown did not return")
	}
	if !c.closed() {
		t.Error("the connection is still open")
	}
	ended(t, p.m)
	if !conn.park.inline {
		t.Error("the connection did not serve inline")
	}
}

// cork sets TCP_CORK on a client's socket: what it writes waits for the
// cork's removal or the write side's shutdown.
func cork(t *testing.T, nc net.Conn) {
	t.Helper()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, 1)
	}); err != nil || serr != nil {
		t.Fatalf("TCP_CORK: %v %v", err, serr)
	}
}
