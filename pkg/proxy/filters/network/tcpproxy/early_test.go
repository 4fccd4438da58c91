package tcpproxy

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestCompileEarlyData(t *testing.T) {
	cfg := clusterCfg("c")
	cfg.UpstreamConnectMode = tcpproxyv3.UpstreamConnectMode_ON_DOWNSTREAM_DATA
	if _, err := compile(cfg); err == nil || !strings.Contains(err.Error(), "max_early_data_bytes: must be set when upstream_connect_mode is ON_DOWNSTREAM_DATA") {
		t.Errorf("ON_DOWNSTREAM_DATA without max_early_data_bytes: %v", err)
	}
	cfg.MaxEarlyDataBytes = wrapperspb.UInt32(maxEarlyData + 1)
	if _, err := compile(cfg); err == nil || !strings.Contains(err.Error(), "max_early_data_bytes.value: must be at most 1048576") {
		t.Errorf("max_early_data_bytes over 1 MiB: %v", err)
	}
	cfg.MaxEarlyDataBytes = wrapperspb.UInt32(0)
	c, err := compile(cfg)
	if err != nil || c.earlyData != 0 || !c.connectOnData {
		t.Errorf("compile = %+v, %v; want early data 0, connecting on data", c, err)
	}
	c, err = compile(clusterCfg("c"))
	if err != nil || c.earlyData != -1 || c.connectOnData {
		t.Errorf("defaults = %+v, %v; want no early data, connecting at once", c, err)
	}
}

// dialProxy connects to the harness with a deadline.
func dialProxy(t *testing.T, h *harness) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*net.TCPConn)
}

// TestEarlyDataReadBeforeConnect checks that with max_early_data_bytes
// the downstream's bytes and end of stream are read while the upstream
// connects, and reach it, in order, once it has, with more that was left
// unread past the limit.
func TestEarlyDataReadBeforeConnect(t *testing.T) {
	echo := echoServer(t)
	gate := make(chan struct{})
	cfg := clusterCfg("echo")
	cfg.MaxEarlyDataBytes = wrapperspb.UInt32(4)
	h := newHarness(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echo}, gate: gate}})
	c := dialProxy(t, h)
	msg := bytes.Repeat([]byte("0123456789"), 10000) // far past the limit
	if _, err := c.Write(msg[:5]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the early read", func() bool { return h.counter("tcp.p.early_data_received_count_total") > 0 })
	if got := h.counter("tcp.p.downstream_cx_rx_bytes_total"); got != 5 {
		t.Errorf("rx bytes before the upstream = %d, want 5", got)
	}
	go func() {
		_, _ = c.Write(msg[5:])
		_ = c.CloseWrite()
	}()
	close(gate)
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d bytes, want the %d sent, in order", len(got), len(msg))
	}
	if g := h.store.Gauge("tcp.p.downstream_cx_rx_bytes_buffered").Value(); g != 0 {
		t.Errorf("rx buffered %d after the end, want 0", g)
	}
}

// TestEarlyDataEndOfStream checks that a downstream that sends its
// request and half-closes before the upstream is there has both
// forwarded.
func TestEarlyDataEndOfStream(t *testing.T) {
	echo := echoServer(t)
	gate := make(chan struct{})
	cfg := clusterCfg("echo")
	cfg.MaxEarlyDataBytes = wrapperspb.UInt32(1024)
	h := newHarness(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echo}, gate: gate}})
	c := dialProxy(t, h)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWrite()
	waitFor(t, "the early read", func() bool { return h.counter("tcp.p.early_data_received_count_total") > 0 })
	close(gate)
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "ping" {
		t.Fatalf("read %q, %v; want ping then the end of the stream", got, err)
	}
}

// TestConnectOnDownstreamData checks ON_DOWNSTREAM_DATA: no upstream for
// a connection that ends without a byte, one once the first bytes came.
func TestConnectOnDownstreamData(t *testing.T) {
	echo := echoServer(t)
	var dials atomic.Int32
	cfg := clusterCfg("echo")
	cfg.UpstreamConnectMode = tcpproxyv3.UpstreamConnectMode_ON_DOWNSTREAM_DATA
	cfg.MaxEarlyDataBytes = wrapperspb.UInt32(0)
	h := newHarness(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echo}, dialed: func(net.Conn) { dials.Add(1) }}})

	silent := dialProxy(t, h)
	_ = silent.CloseWrite()
	if _, err := io.ReadAll(silent); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	if n := dials.Load(); n != 0 {
		t.Errorf("%d upstream connections for a connection that sent nothing, want 0", n)
	}
	if want := "echo - 0 0 --\n"; h.log.String() != want {
		t.Errorf("access log %q, want %q", h.log.String(), want)
	}

	c := dialProxy(t, h)
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want hello", got, err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d upstream connections, want 1", n)
	}
}
