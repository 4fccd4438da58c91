package listener

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestTCPBacklogSize checks that tcp_backlog_size is the accept queue of
// every listening socket, as the kernel reports it (a listening socket's
// tcp_info carries its backlog in tcpi_sacked), and that without it the
// queue is the system's somaxconn, Envoy's default.
func TestTCPBacklogSize(t *testing.T) {
	somax, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		t.Skip("no /proc/sys/net/core/somaxconn:", err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(somax)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		want  int
	}{
		{"tcp_backlog_size: 7", 7},
		{"tcp_backlog_size: 0", 0},
		{"", max},
	} {
		l := buildListener(t, stats.NewStore(), 2, `
name: backlog
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
additional_addresses: [{address: {socket_address: {address: 127.0.0.2, port_value: 0}}}]
enable_reuse_port: true
`+tc.field+`
filter_chains: [{name: echo}]
`)
		addr := serve(t, l)
		if got := exchange(t, addr, "hi"); got != "echo:hi" {
			t.Fatalf("%q: echo %q", tc.field, got)
		}
		n := 0
		for _, ln := range listeningSockets(l) {
			n++
			if got := backlogOf(t, ln); got != tc.want {
				t.Errorf("%q: backlog %d, want %d", tc.field, got, tc.want)
			}
		}
		if n != 4 {
			t.Errorf("%q: %d sockets, want 2 per address", tc.field, n)
		}
	}
}

// TestListenerTCPKeepalive checks tcp_keepalive on the listening sockets
// (which the accepted ones inherit) and an additional address's own
// socket_options and tcp_keepalive: replaced, turned off by a 0, or
// inherited from the listener when unset.
func TestListenerTCPKeepalive(t *testing.T) {
	l := buildListener(t, stats.NewStore(), 1, `
name: ka
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
socket_options: [{level: 1, name: 12, int_value: 5}]   # SO_PRIORITY
tcp_keepalive: {keepalive_probes: 3, keepalive_time: 7, keepalive_interval: 2}
additional_addresses:
- address: {socket_address: {address: 127.0.0.2, port_value: 0}}
- address: {socket_address: {address: 127.0.0.3, port_value: 0}}
  socket_options: {socket_options: [{level: 1, name: 12, int_value: 2}]}
  tcp_keepalive: {keepalive_time: 30}
- address: {socket_address: {address: 127.0.0.4, port_value: 0}}
  socket_options: {}
  tcp_keepalive: {keepalive_probes: 0}
enable_reuse_port: false
filter_chains: [{name: echo}]
`)
	addr := serve(t, l)
	if got := exchange(t, addr, "hi"); got != "echo:hi" {
		t.Fatalf("echo %q", got)
	}
	socks := listeningSockets(l)
	if len(socks) != 4 {
		t.Fatalf("%d sockets, want 4", len(socks))
	}
	system := func() int { // the kernel's default keep-alive idle time
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_keepalive_time")
		if err != nil {
			t.Skip(err)
		}
		v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return v
	}
	for i, want := range []struct{ priority, keepalive, idle, count, interval int }{
		{5, 1, 7, 3, 2},
		{5, 1, 7, 3, 2},
		{2, 1, 30, -1, -1},
		{0, 0, -1, -1, -1},
	} {
		ln := socks[i]
		got := []int{
			sockoptInt(t, ln, unix.SOL_SOCKET, unix.SO_PRIORITY),
			sockoptInt(t, ln, unix.SOL_SOCKET, unix.SO_KEEPALIVE),
			sockoptInt(t, ln, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE),
		}
		wantIdle := want.idle
		if wantIdle < 0 {
			wantIdle = system()
		}
		if got[0] != want.priority || got[1] != want.keepalive || got[2] != wantIdle {
			t.Errorf("address %d: SO_PRIORITY, SO_KEEPALIVE, TCP_KEEPIDLE = %v, want %d %d %d", i, got, want.priority, want.keepalive, wantIdle)
		}
		if want.count > 0 {
			if c, iv := sockoptInt(t, ln, unix.IPPROTO_TCP, unix.TCP_KEEPCNT), sockoptInt(t, ln, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL); c != want.count || iv != want.interval {
				t.Errorf("address %d: TCP_KEEPCNT %d, TCP_KEEPINTVL %d, want %d %d", i, c, iv, want.count, want.interval)
			}
		}
	}
}

func TestBacklogAndKeepaliveRefusedOnUDP(t *testing.T) {
	for field, want := range map[string]string{
		"tcp_backlog_size: 8":                      "tcp_backlog_size: not supported on a UDP listener",
		"tcp_keepalive: {keepalive_time: 5}":       "tcp_keepalive: not supported on a UDP listener",
		"tcp_backlog_size: 4294967295":             "tcp_backlog_size: not supported on a UDP listener",
		"tcp_keepalive: {keepalive_probes: 0}":     "", // off: nothing to refuse
		"tcp_keepalive: {keepalive_time: 5000000}": "tcp_keepalive: not supported on a UDP listener",
	} {
		_, err := Build(parseListener(t, `
name: udp
address: {socket_address: {protocol: UDP, address: 127.0.0.1, port_value: 0}}
`+field), testDeps(stats.NewStore(), 1))
		// The test listener has no udp_proxy, which is refused too: what
		// matters is whether the field is.
		if want == "" {
			if err != nil && strings.Contains(err.Error(), "tcp_keepalive") {
				t.Errorf("%s: %v", field, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", field, err, want)
		}
	}
	_, err := Build(parseListener(t, `
name: big
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
tcp_backlog_size: 4294967295
tcp_keepalive: {keepalive_time: 4294967295}
filter_chains: [{name: echo}]
`), testDeps(stats.NewStore(), 1))
	for _, want := range []string{"tcp_backlog_size: 4294967295 does not fit in a C int", "tcp_keepalive: keepalive_time: 4294967295 does not fit in a C int"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// listeningSockets lists l's bound sockets, address by address.
func listeningSockets(l *Listener) []net.Listener {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []net.Listener
	for _, socks := range l.sockets {
		out = append(out, socks...)
	}
	return out
}

// backlogOf reads a listening socket's accept queue size: the kernel
// reports it in tcp_info's tcpi_sacked for a socket in the LISTEN state.
func backlogOf(t *testing.T, ln net.Listener) int {
	t.Helper()
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return int(info.Sacked)
}
