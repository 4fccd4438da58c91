//go:build linux

package cluster

import (
	"net"
	"syscall"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// getsockoptInt reads an integer socket option of a TCP connection.
func getsockoptInt(t *testing.T, c net.Conn, level, opt int) int {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

func TestTCPKeepalive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	dial := func(cfg *net.KeepAliveConfig) net.Conn {
		c, err := tcpDialer(cfg, nil)(t.Context(), ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// Without tcp_keepalive, none (Go's dialer would enable it).
	if got := getsockoptInt(t, dial(nil), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); got != 0 {
		t.Errorf("SO_KEEPALIVE = %d without tcp_keepalive, want 0", got)
	}
	c := dial(keepaliveConfig(&corev3.TcpKeepalive{
		KeepaliveTime: wrapperspb.UInt32(30), KeepaliveInterval: wrapperspb.UInt32(5), KeepaliveProbes: wrapperspb.UInt32(4),
	}))
	want := map[string][3]int{
		"SO_KEEPALIVE":  {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		"TCP_KEEPIDLE":  {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 30},
		"TCP_KEEPINTVL": {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 5},
		"TCP_KEEPCNT":   {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 4},
	}
	for name, w := range want {
		if got := getsockoptInt(t, c, w[0], w[1]); got != w[2] {
			t.Errorf("%s = %d, want %d", name, got, w[2])
		}
	}
	// Unset values keep the system's defaults.
	sysIdle := getsockoptInt(t, dial(nil), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
	c = dial(keepaliveConfig(&corev3.TcpKeepalive{KeepaliveProbes: wrapperspb.UInt32(2)}))
	if got := getsockoptInt(t, c, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE); got != sysIdle {
		t.Errorf("TCP_KEEPIDLE = %d with only probes set, want the system's %d", got, sysIdle)
	}
}

// TestUpstreamBindConfig dials from upstream_bind_config's source address
// with its socket options set.
func TestUpstreamBindConfig(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan net.Addr, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			from <- c.RemoteAddr()
			c.Close()
		}
	}()
	bind, errs := buildBind(&corev3.BindConfig{
		SourceAddress: &corev3.SocketAddress{Address: "127.0.0.2"},
		Freebind:      wrapperspb.Bool(true),
		SocketOptions: []*corev3.SocketOption{{Level: syscall.SOL_SOCKET, Name: syscall.SO_KEEPALIVE, Value: &corev3.SocketOption_IntValue{IntValue: 1}}},
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c, err := tcpDialer(nil, bind)(t.Context(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := (<-from).(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Errorf("the connection came from %s, want 127.0.0.2", got)
	}
	if v := getsockoptInt(t, c, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); v != 1 {
		t.Errorf("SO_KEEPALIVE = %d, want 1 from socket_options", v)
	}
	if v := getsockoptInt(t, c, syscall.SOL_IP, 15 /* IP_FREEBIND */); v != 1 {
		t.Errorf("IP_FREEBIND = %d, want 1 from freebind", v)
	}

	_, errs = buildBind(&corev3.BindConfig{
		SourceAddress: &corev3.SocketAddress{Address: "not-an-ip"},
		SocketOptions: []*corev3.SocketOption{{Level: 1, Name: 2}},
	})
	want := []string{
		`upstream_bind_config.source_address.address: "not-an-ip" is not an IP address`,
		"upstream_bind_config.socket_options[0]: one of int_value or buf_value is required",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %v", errs, want)
	}
	for i := range want {
		if errs[i].Error() != want[i] {
			t.Errorf("error %d = %q, want %q", i, errs[i], want[i])
		}
	}
}
