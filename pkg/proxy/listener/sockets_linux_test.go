package listener

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestTCPFastOpenQueueLength checks that tcp_fast_open_queue_length is the
// TCP_FASTOPEN queue of every listening socket, as the kernel reports it,
// and that 0 turns Fast Open off.
func TestTCPFastOpenQueueLength(t *testing.T) {
	for _, qlen := range []int{16, 0} {
		l := buildListener(t, stats.NewStore(), 2, `
name: tfo
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
enable_reuse_port: true
tcp_fast_open_queue_length: `+strconv.Itoa(qlen)+`
filter_chains: [{name: echo}]
`)
		addr := serve(t, l)
		if got := exchange(t, addr, "hi"); got != "echo:hi" {
			t.Fatalf("echo %q", got)
		}
		l.mu.Lock()
		sockets := l.sockets
		l.mu.Unlock()
		n := 0
		for _, socks := range sockets {
			for _, ln := range socks {
				n++
				if got := sockoptInt(t, ln, unix.IPPROTO_TCP, unix.TCP_FASTOPEN); got != qlen {
					t.Errorf("TCP_FASTOPEN %d, want %d", got, qlen)
				}
			}
		}
		if n < 2 {
			t.Errorf("%d sockets, want one per worker", n)
		}
	}
}

func TestTCPFastOpenRefusedOnUDP(t *testing.T) {
	_, err := Build(parseListener(t, `
name: udp
address: {socket_address: {protocol: UDP, address: 127.0.0.1, port_value: 0}}
tcp_fast_open_queue_length: 8
`), testDeps(stats.NewStore(), 1))
	if err == nil || !strings.Contains(err.Error(), "tcp_fast_open_queue_length: not supported on a UDP listener") {
		t.Fatalf("error %v", err)
	}
}

// TestTransparent checks that transparent: true sets IP_TRANSPARENT on the
// listening sockets before they bind; without CAP_NET_ADMIN the kernel
// refuses it and the bind fails, saying so.
func TestTransparent(t *testing.T) {
	l, err := Build(parseListener(t, `
name: tproxy
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
transparent: true
filter_chains: [{name: echo}]
`), testDeps(stats.NewStore(), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(); err != nil {
		if unix.Geteuid() != 0 && strings.Contains(err.Error(), "operation not permitted") {
			return // the kernel's answer without CAP_NET_ADMIN
		}
		t.Fatal(err)
	}
	addr := serve(t, l)
	if got := exchange(t, addr, "hi"); got != "echo:hi" {
		t.Fatalf("echo %q", got)
	}
	l.mu.Lock()
	ln := l.sockets[0][0]
	l.mu.Unlock()
	if got := sockoptInt(t, ln, unix.SOL_IP, unix.IP_TRANSPARENT); got != 1 {
		t.Errorf("IP_TRANSPARENT %d, want 1", got)
	}
}

// sockoptInt reads an integer option of a listening socket, as the kernel
// reports it.
func sockoptInt(t *testing.T, ln net.Listener, level, name int) int {
	t.Helper()
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	if err := raw.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), level, name) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return got
}
