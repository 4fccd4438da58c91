package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

func TestCompileSideIdleTimeouts(t *testing.T) {
	cfg := clusterCfg("c")
	cfg.DownstreamIdleTimeout = durationpb.New(2 * time.Second)
	cfg.UpstreamIdleTimeout = durationpb.New(0)
	c, err := compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.downIdle != 2*time.Second || c.upIdle != 0 || c.idleTimeout != time.Hour {
		t.Errorf("down %s, up %s, idle %s; want 2s, none, and idle_timeout's own 1h", c.downIdle, c.upIdle, c.idleTimeout)
	}
	cfg.DownstreamIdleTimeout = durationpb.New(-time.Second)
	cfg.UpstreamIdleTimeout = durationpb.New(-time.Second)
	_, err = compile(cfg)
	want := "downstream_idle_timeout: must not be negative\nupstream_idle_timeout: must not be negative"
	if err == nil || err.Error() != want {
		t.Errorf("compile: %v; want %q", err, want)
	}
}

// ticker writes a byte every 10ms and never reads.
func ticker(c net.Conn) {
	for {
		if _, err := c.Write([]byte("t")); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDownstreamIdleTimeout: an upstream that keeps talking does not keep
// alive a downstream that says nothing.
func TestDownstreamIdleTimeout(t *testing.T) {
	up := serveTCP(t, ticker)
	cfg := clusterCfg("up")
	cfg.DownstreamIdleTimeout = durationpb.New(100 * time.Millisecond)
	h := newHarness(t, cfg, fakeClusters{"up": {name: "up", hosts: []string{up}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// Without the timer, the ticks would go on until the deadline.
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v after %d bytes; want the proxy to close", err, len(got))
	}
	if len(got) == 0 {
		t.Error("no tick came through before the close")
	}
	if n := h.counter("tcp.p.idle_timeout"); n != 1 {
		t.Errorf("idle_timeout = %d, want 1", n)
	}
}

// TestUpstreamIdleTimeout: a downstream that keeps talking does not keep
// alive an upstream that says nothing.
func TestUpstreamIdleTimeout(t *testing.T) {
	up := serveTCP(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	cfg := clusterCfg("up")
	cfg.UpstreamIdleTimeout = durationpb.New(100 * time.Millisecond)
	h := newHarness(t, cfg, fakeClusters{"up": {name: "up", hosts: []string{up}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(c)
		closed <- err
	}()
	for {
		select {
		case err := <-closed:
			// The proxy closing with the client's bytes unread resets
			// the connection: a close too; only the deadline is not.
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("read: %v; want the proxy to close", err)
			}
			if n := h.counter("tcp.p.idle_timeout"); n != 1 {
				t.Errorf("idle_timeout = %d, want 1", n)
			}
			return
		case <-time.After(10 * time.Millisecond):
			// Writes fail once the proxy has closed; the read says so.
			_, _ = c.Write([]byte("d"))
		}
	}
}

// TestSideIdleTimeoutKeptAlive: a side that keeps sending is not idle,
// however long the connection lasts, even though its peer says nothing
// until the end.
func TestSideIdleTimeoutKeptAlive(t *testing.T) {
	// The upstream is silent until it reads "!", then answers "ok".
	up := serveTCP(t, func(c net.Conn) {
		if _, err := bufio.NewReader(c).ReadString('!'); err == nil {
			_, _ = c.Write([]byte("ok"))
		}
	})
	cfg := clusterCfg("up")
	cfg.DownstreamIdleTimeout = durationpb.New(300 * time.Millisecond)
	h := newHarness(t, cfg, fakeClusters{"up": {name: "up", hosts: []string{up}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// Three times the timeout, a byte every 10ms.
	for end := time.Now().Add(900 * time.Millisecond); time.Now().Before(end); {
		if _, err := c.Write([]byte(".")); err != nil {
			t.Fatalf("write: %v; the downstream was not idle", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(got), "ok") {
		t.Errorf("answer %q, %v; want ok", got, err)
	}
	if n := h.counter("tcp.p.idle_timeout"); n != 0 {
		t.Errorf("idle_timeout = %d, want 0", n)
	}
}
