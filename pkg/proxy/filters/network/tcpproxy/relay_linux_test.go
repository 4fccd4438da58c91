//go:build linux && !tcpproxy_goroutines

package tcpproxy

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// loopStarted reports whether the proxy started an event loop.
func loopStarted(p *Proxy) bool {
	p.loops.mu.Lock()
	defer p.loops.mu.Unlock()
	for _, l := range p.loops.all {
		if l != nil {
			return true
		}
	}
	return false
}

// TestLoopSmallMessages: small messages on several connections go through
// the event loop, each echoed whole, and every byte is counted.
func TestLoopSmallMessages(t *testing.T) {
	echo := echoServer(t)
	h := newHarness(t, clusterCfg("echo"), fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	const conns, rounds, size = 8, 200, 128
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", h.addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			msg, got := bytes.Repeat([]byte{byte('a' + i)}, size), make([]byte, size)
			for range rounds {
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, msg) {
					errs <- io.ErrUnexpectedEOF
					return
				}
			}
			_ = c.(*net.TCPConn).CloseWrite()
			if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
				errs <- io.ErrUnexpectedEOF
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !loopStarted(h.p) {
		t.Error("no event loop started for plain TCP connections")
	}
	const total = conns * rounds * size
	waitFor(t, "every connection to end", func() bool { return h.p.ActiveConnections() == 0 })
	for _, name := range []string{"tcp.p.downstream_cx_rx_bytes_total", "tcp.p.downstream_cx_tx_bytes_total"} {
		if got := h.counter(name); got != total {
			t.Errorf("%s = %d, want %d", name, got, total)
		}
	}
}

// limitConn is a downstream connection with a listener's buffer limit.
type limitConn struct {
	*net.TCPConn
	limit uint32
}

func (c limitConn) NetConn() net.Conn   { return c.TCPConn }
func (c limitConn) BufferLimit() uint32 { return c.limit }

// TestLoopFlowControl: on the event loop (a buffer limit below the bulk
// size keeps the connection there), an upstream that stops reading stops
// the reading of the client, the proxy holds at most the limit, and
// every byte arrives once the upstream reads again.
func TestLoopFlowControl(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	release := make(chan struct{})
	received := make(chan int64, 1)
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		<-release
		n, _ := io.Copy(io.Discard, c)
		received <- n
	}()
	h := newHarness(t, clusterCfg("slow"), fakeClusters{"slow": {name: "slow", hosts: []string{up.Addr().String()}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const limit = 16 << 10
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		h.p.HandleConn(limitConn{c.(*net.TCPConn), limit})
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	const total = 64 << 20 // far more than every socket buffer on the way
	written := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(c, io.LimitReader(zeros{}, total))
		_ = c.(*net.TCPConn).CloseWrite()
		written <- n
	}()
	waitFor(t, "the client's reading to pause", func() bool { return h.counter("tcp.p.downstream_flow_control_paused_reading_total") > 0 })
	if b := h.store.Gauge("tcp.p.downstream_cx_rx_bytes_buffered").Value(); b < 0 || b > limit {
		t.Errorf("%d bytes buffered, want at most the limit (%d)", b, limit)
	}
	if rx := h.counter("tcp.p.downstream_cx_rx_bytes_total"); rx >= total {
		t.Errorf("the proxy read all %d bytes from the client while its upstream read none", rx)
	}
	if !loopStarted(h.p) {
		t.Error("no event loop started")
	}
	close(release)
	if n := <-written; n != total {
		t.Errorf("client wrote %d bytes, want %d", n, total)
	}
	// The client's FIN reaches the upstream after the last byte.
	select {
	case n := <-received:
		if n != total {
			t.Errorf("upstream received %d bytes, want %d", n, total)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream never saw the end of the stream")
	}
	if p, r := h.counter("tcp.p.downstream_flow_control_paused_reading_total"), h.counter("tcp.p.downstream_flow_control_resumed_reading_total"); p != r {
		t.Errorf("paused %d times, resumed %d", p, r)
	}
	if g := h.store.Gauge("tcp.p.downstream_cx_rx_bytes_buffered").Value(); g != 0 {
		t.Errorf("rx buffered %d after the transfer, want 0", g)
	}
}

// TestLoopUpstreamClosedElsewhere: an upstream connection closed by
// someone else while the loop holds it (a cluster closing its
// connections) ends the session, as it ends the goroutine relay's.
func TestLoopUpstreamClosedElsewhere(t *testing.T) {
	echo := echoServer(t)
	dialed := make(chan net.Conn, 1)
	cl := &fakeCluster{name: "echo", hosts: []string{echo}, dialed: func(c net.Conn) { dialed <- c }}
	h := newHarness(t, clusterCfg("echo"), fakeClusters{"echo": cl})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	_ = (<-dialed).Close()
	// The client sees its connection end, without sending anything.
	if _, err := io.ReadAll(c); err != nil {
		t.Logf("read: %v", err)
	}
	waitFor(t, "the session to end", func() bool { return h.p.ActiveConnections() == 0 })
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
}

// TestLoopUpstreamFlush: a client that resets while the proxy holds its
// bytes for an upstream that does not read: the upstream stays open until
// it has them all (upstream_flush_*), then closes.
func TestLoopUpstreamFlush(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	upConn := make(chan net.Conn, 1)
	go func() {
		c, err := up.Accept()
		if err == nil {
			upConn <- c
		}
	}()
	h := newHarness(t, clusterCfg("slow"), fakeClusters{"slow": {name: "slow", hosts: []string{up.Addr().String()}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		h.p.HandleConn(limitConn{c.(*net.TCPConn), 16 << 10})
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = io.Copy(c, io.LimitReader(zeros{}, 64<<20)) }()
	var u net.Conn
	select {
	case u = <-upConn:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy never connected upstream")
	}
	defer u.Close()
	waitFor(t, "the client's reading to pause", func() bool { return h.counter("tcp.p.downstream_flow_control_paused_reading_total") > 0 })
	// The client resets; the proxy learns it when it writes the
	// upstream's bytes to it.
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
	for range 200 {
		if h.counter("tcp.p.upstream_flush_total") > 0 {
			break
		}
		_, _ = u.Write([]byte("x"))
		time.Sleep(20 * time.Millisecond)
	}
	if got := h.counter("tcp.p.upstream_flush_total"); got != 1 {
		t.Fatalf("upstream_flush_total = %d, want 1", got)
	}
	if got := h.store.Gauge("tcp.p.upstream_flush_active").Value(); got != 1 {
		t.Errorf("upstream_flush_active = %d while flushing, want 1", got)
	}
	_ = u.SetDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, u)
	if err != nil {
		t.Fatalf("upstream read after %d bytes: %v", n, err)
	}
	if rx := h.counter("tcp.p.downstream_cx_rx_bytes_total"); uint64(n) != rx {
		t.Errorf("upstream received %d bytes, the proxy read %d from the client", n, rx)
	}
	waitFor(t, "the flush to end", func() bool { return h.store.Gauge("tcp.p.upstream_flush_active").Value() == 0 })
	waitFor(t, "the session to end", func() bool { return h.p.ActiveConnections() == 0 })
}

// TestLoopChurnAndStop: connections that come and go reuse the loop's
// slots without crossing each other's bytes, and the loop ends with the
// proxy.
func TestLoopChurnAndStop(t *testing.T) {
	echo := echoServer(t)
	h := newHarness(t, clusterCfg("echo"), fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				c, err := net.Dial("tcp", h.addr)
				if err != nil {
					errs <- err
					return
				}
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				msg := []byte{byte(w), byte(i), 'x'}
				_, err = c.Write(msg)
				got := make([]byte, len(msg))
				if err == nil {
					_, err = io.ReadFull(c, got)
				}
				if i%2 == 0 {
					_ = c.(*net.TCPConn).CloseWrite()
					_, _ = io.ReadAll(c)
				}
				_ = c.Close()
				if err == nil && !bytes.Equal(got, msg) {
					err = io.ErrUnexpectedEOF
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, "every connection to end", func() bool { return h.p.ActiveConnections() == 0 })
	if !loopStarted(h.p) {
		t.Fatal("no event loop started")
	}
	_ = h.p.Close()
	h.p.loops.mu.Lock()
	loops := h.p.loops.all
	h.p.loops.mu.Unlock()
	for _, l := range loops {
		if l == nil {
			continue
		}
		waitFor(t, "the loop to end", func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.exited
		})
	}
}
