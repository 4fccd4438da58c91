package listener

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestBindServeStats(t *testing.T) {
	tests := map[string]struct {
		address string
		scope   string // the listener's stat scope
		v6      bool
	}{
		"ipv4 port 0":     {address: "127.0.0.1", scope: "listener.127.0.0.1_0."},
		"ipv6 port 0":     {address: "::1", scope: "listener.[__1]_0.", v6: true},
		"ipv4 any port 0": {address: "0.0.0.0", scope: "listener.0.0.0.0_0."},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.v6 && !haveIPv6() {
				t.Skip("no IPv6 loopback on this machine")
			}
			store := stats.NewStore()
			l := buildListener(t, store, 1, fmt.Sprintf(`
name: plain
address: {socket_address: {address: %q, port_value: 0}}
filter_chains: [{name: only}]
`, tc.address))
			if l.Addr() != nil {
				t.Fatal("Addr before Bind is not nil")
			}
			addr := serve(t, l)
			port := l.Addr().(*net.TCPAddr).Port
			if port == 0 {
				t.Fatal("port 0 was not resolved")
			}
			dial := addr
			if tc.address == "0.0.0.0" {
				dial = fmt.Sprintf("127.0.0.1:%d", port)
			}
			if got := exchange(t, dial, "hello"); got != "only:hello" {
				t.Fatalf("answer = %q, want only:hello", got)
			}
			eventually(t, "the connection's end to be counted", func() bool { return l.ActiveConnections() == 0 })
			want := map[string]uint64{
				"downstream_cx_total":          1,
				"downstream_cx_destroy":        1,
				"no_filter_chain_match":        0,
				"worker_0.downstream_cx_total": 1,
				"downstream_cx_overflow":       0,
			}
			for stat, v := range want {
				if got := store.Counter(tc.scope + stat).Value(); got != v {
					t.Errorf("%s%s = %d, want %d", tc.scope, stat, got, v)
				}
			}
			for _, g := range []string{"downstream_cx_active", "worker_0.downstream_cx_active", "downstream_pre_cx_active"} {
				if got := store.Gauge(tc.scope + g).Value(); got != 0 {
					t.Errorf("%s%s = %d, want 0", tc.scope, g, got)
				}
			}
			if !store.Histogram(tc.scope + "downstream_cx_length_ms").Used() {
				t.Error("downstream_cx_length_ms recorded nothing")
			}
		})
	}
}

func TestStopRefusesNewConnectionsButKeepsOpenOnes(t *testing.T) {
	store := stats.NewStore()
	l := buildListener(t, store, 2, `
name: drained
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: only}]
`)
	addr := serve(t, l)
	open, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if got := roundTrip(t, open, "before"); got != "only:before" {
		t.Fatalf("answer before Stop = %q", got)
	}

	l.Stop()
	l.Stop() // counted once
	if got := store.Counter("listener_manager.listener_stopped").Value(); got != 1 {
		t.Errorf("listener_manager.listener_stopped = %d, want 1", got)
	}
	select {
	case <-l.Done():
	case <-timeAfter():
		t.Fatal("Serve did not return after Stop")
	}
	if c, err := net.DialTimeout("tcp", addr, ioTimeout); err == nil {
		c.Close()
		t.Fatal("a stopped listener still accepts connections")
	}
	if got := roundTrip(t, open, "after"); got != "only:after" {
		t.Fatalf("an open connection stopped working after Stop: %q", got)
	}
	l.Close()
	if got := store.Counter("listener_manager.listener_stopped").Value(); got != 1 {
		t.Errorf("Close after Stop counted: listener_stopped = %d, want 1", got)
	}
}

func TestCloseCountsNoStop(t *testing.T) {
	store := stats.NewStore()
	l := buildListener(t, store, 1, `
name: shutdown
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{}]
`)
	serve(t, l)
	l.Close()
	if got := store.Counter("listener_manager.listener_stopped").Value(); got != 0 {
		t.Errorf("listener_manager.listener_stopped = %d after Close, want 0", got)
	}
}

func TestStoppedBeforeBindStaysStopped(t *testing.T) {
	store := stats.NewStore()
	l := buildListener(t, store, 2, `
name: early
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{}]
`)
	l.Stop()
	if err := l.Bind(); err != nil {
		t.Fatalf("Bind after Stop: %v", err)
	}
	if l.Addr() != nil || l.sockets != nil {
		t.Fatal("a stopped listener bound sockets")
	}
	if err := l.Serve(); err != nil {
		t.Fatalf("Serve of a stopped listener: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Error("Done is not closed after Serve returned")
	}
	if got := store.Counter("listener_manager.listener_stopped").Value(); got != 1 {
		t.Errorf("listener_stopped = %d, want 1", got)
	}
}

func TestWorkersShareOnePort(t *testing.T) {
	tests := map[string]struct {
		reusePort   string // enable_reuse_port, "" when unset
		wantSockets int
	}{
		"reuse port by default": {wantSockets: 4},
		"reuse port off":        {reusePort: "enable_reuse_port: false", wantSockets: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if !reusePortSupported && tc.wantSockets > 1 {
				t.Skip("SO_REUSEPORT does not balance connections on this system")
			}
			store := stats.NewStore()
			l := buildListener(t, store, 4, `
name: workers
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: w}]
`+tc.reusePort)
			addr := serve(t, l)
			if got := len(l.sockets[0]); got != tc.wantSockets {
				t.Fatalf("sockets = %d, want %d", got, tc.wantSockets)
			}
			for i, s := range l.sockets[0] {
				if s.Addr().String() != addr {
					t.Errorf("socket %d is bound to %s, want %s", i, s.Addr(), addr)
				}
			}
			const conns = 40
			for i := range conns {
				if got := exchange(t, addr, fmt.Sprint(i)); got != fmt.Sprintf("w:%d", i) {
					t.Fatalf("connection %d answered %q", i, got)
				}
			}
			var perWorker uint64
			for w := range 4 {
				perWorker += store.Counter(fmt.Sprintf("listener.127.0.0.1_0.worker_%d.downstream_cx_total", w)).Value()
			}
			if total := store.Counter("listener.127.0.0.1_0.downstream_cx_total").Value(); total != conns || perWorker != conns {
				t.Errorf("downstream_cx_total = %d, sum over workers = %d, want %d", total, perWorker, conns)
			}
			if got := store.Counter("listener_manager.listener_create_success").Value(); got != 4 {
				t.Errorf("listener_manager.listener_create_success = %d, want 4 (one per worker)", got)
			}
		})
	}
}

func TestNoFilterChainMatchClosesAndCounts(t *testing.T) {
	store := stats.NewStore()
	l := buildListener(t, store, 1, `
name: picky
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains:
- name: elsewhere
  filter_chain_match: {source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}
`)
	addr := serve(t, l)
	if got := exchange(t, addr, "hello"); got != "" {
		t.Fatalf("an unmatched connection was answered %q", got)
	}
	eventually(t, "no_filter_chain_match", func() bool {
		return store.Counter("listener.127.0.0.1_0.no_filter_chain_match").Value() == 1
	})
	if got := store.Counter("listener.127.0.0.1_0.downstream_cx_total").Value(); got != 0 {
		t.Errorf("downstream_cx_total = %d for a refused connection, want 0", got)
	}
}

func TestDefaultFilterChainAndStatPrefix(t *testing.T) {
	store := stats.NewStore()
	l := buildListener(t, store, 1, `
name: fallback
stat_prefix: ingress
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains:
- name: elsewhere
  filter_chain_match: {source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}
default_filter_chain: {name: fallback}
`)
	addr := serve(t, l)
	if got := exchange(t, addr, "hi"); got != "fallback:hi" {
		t.Fatalf("answer = %q, want fallback:hi", got)
	}
	eventually(t, "the connection's end", func() bool { return l.ActiveConnections() == 0 })
	if got := store.Counter("listener.ingress.downstream_cx_total").Value(); got != 1 {
		t.Errorf("listener.ingress.downstream_cx_total = %d, want 1", got)
	}
}

func TestConnCarriesBufferLimit(t *testing.T) {
	tests := map[string]struct {
		config string
		want   uint32
	}{
		"default": {want: DefaultBufferLimit},
		"set":     {config: "per_connection_buffer_limit_bytes: 32768", want: 32768},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := make(chan *Conn, 1)
			deps := testDeps(stats.NewStore(), 1)
			deps.BuildChain = func(*listenerv3.FilterChain, *Drain) (ConnHandler, error) {
				return handlerFunc(func(c net.Conn) {
					got <- c.(*Conn)
					_ = c.Close()
				}), nil
			}
			l, err := Build(parseListener(t, `
name: limited
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: c}]
`+tc.config), deps)
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, l)
			c, err := net.DialTimeout("tcp", addr, ioTimeout)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			select {
			case conn := <-got:
				if conn.BufferLimit() != tc.want || conn.Listener() != "limited" || conn.FilterChain() != "c" {
					t.Errorf("conn = limit %d, listener %q, chain %q; want %d, limited, c",
						conn.BufferLimit(), conn.Listener(), conn.FilterChain(), tc.want)
				}
				if _, ok := conn.NetConn().(*net.TCPConn); !ok {
					t.Errorf("NetConn() is a %T, want *net.TCPConn", conn.NetConn())
				}
			case <-timeAfter():
				t.Fatal("the handler got no connection")
			}
		})
	}
}

// handlerFunc adapts a function to ConnHandler.
type handlerFunc func(net.Conn)

func (f handlerFunc) HandleConn(c net.Conn) { f(c) }

func TestAddressesBeforeAndAfterBind(t *testing.T) {
	store := stats.NewStore()
	l := buildListener(t, store, 1, `
name: two
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: 0}}}]
filter_chains: [{name: c}]
`)
	render := func() string {
		var parts []string
		for _, a := range l.Addresses() {
			parts = append(parts, AddressString(a.GetSocketAddress()))
		}
		return strings.Join(parts, " ")
	}
	if got := render(); got != "127.0.0.1:0 127.0.0.1:0" {
		t.Errorf("before Bind: %s, want the configured addresses", got)
	}
	serve(t, l)
	addrs := l.Addresses()
	if len(addrs) != 2 {
		t.Fatalf("%d addresses after Bind, want 2", len(addrs))
	}
	for i, a := range addrs {
		sa := a.GetSocketAddress()
		if sa.GetPortValue() == 0 || sa.GetAddress() != "127.0.0.1" {
			t.Errorf("address %d = %s, want 127.0.0.1 with a resolved port", i, AddressString(sa))
		}
		if got := exchange(t, AddressString(sa), "x"); got != "c:x" {
			t.Errorf("address %d answered %q", i, got)
		}
	}
	if addrs[0].GetSocketAddress().GetPortValue() == addrs[1].GetSocketAddress().GetPortValue() {
		t.Error("both addresses got the same port")
	}
}

func TestBindErrorNamesTheListener(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	l := buildListener(t, stats.NewStore(), 2, fmt.Sprintf(`
name: clash
address: {socket_address: {address: 127.0.0.1, port_value: %d}}
filter_chains: [{}]
`, port))
	err = l.Bind()
	if want := fmt.Sprintf(`listener "clash": cannot bind 127.0.0.1:%d:`, port); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want prefix %q", err, want)
	}
	if l.Addr() != nil {
		t.Error("a failed Bind left an address")
	}
}

func TestServeBeforeBind(t *testing.T) {
	l := buildListener(t, stats.NewStore(), 1, `
name: early
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{}]
`)
	if err := l.Serve(); err == nil {
		t.Fatal("Serve before Bind succeeded")
	}
}

func TestBuildErrors(t *testing.T) {
	tests := map[string]struct {
		config string
		want   []string // every error line, in order
	}{
		"no socket address": {
			config: `{name: a, address: {pipe: {path: /tmp/x}}, filter_chains: [{}]}`,
			want:   []string{"address.socket_address: a socket address is required"},
		},
		"host name": {
			config: `{name: a, address: {socket_address: {address: localhost, port_value: 1}}, filter_chains: [{}]}`,
			want:   []string{`address.socket_address.address: "localhost" is not an IP address (listeners bind IP addresses, not names)`},
		},
		"ipv4_compat on an IPv4 address": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1, port_value: 1, ipv4_compat: true}}, filter_chains: [{}]}`,
			want:   []string{`address.socket_address.ipv4_compat: only the IPv6 address "::" or an IPv4-mapped IPv6 address can set it, not "127.0.0.1"`},
		},
		"bad additional address": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, additional_addresses: [{address: {socket_address: {address: nowhere}}}], filter_chains: [{}]}`,
			want:   []string{`additional_addresses[0].address.socket_address.address: "nowhere" is not an IP address (listeners bind IP addresses, not names)`},
		},
		"no filter chains": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}}`,
			want:   []string{"filter_chains: no filter chains specified (give filter_chains or a default_filter_chain)"},
		},
		"zero buffer limit": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, per_connection_buffer_limit_bytes: 0, filter_chains: [{}]}`,
			want:   []string{"per_connection_buffer_limit_bytes: must be above 0"},
		},
		"same matching rules": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [
				{filter_chain_match: {destination_port: 80, prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}, {address_prefix: 10.1.0.0, prefix_len: 16}]}},
				{filter_chain_match: {destination_port: 80, prefix_ranges: [{address_prefix: 10.9.9.9, prefix_len: 8}]}},
				{filter_chain_match: {destination_port: 81}}]}`,
			want: []string{"filter_chains[1].filter_chain_match: multiple filter chains with the same matching rules are defined (filter_chains[0] matches the same connections)"},
		},
		"empty match and explicit any range are the same": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [
				{}, {filter_chain_match: {source_prefix_ranges: [{address_prefix: "::", prefix_len: 0}]}}]}`,
			want: []string{"filter_chains[1].filter_chain_match: multiple filter chains with the same matching rules are defined (filter_chains[0] matches the same connections)"},
		},
		"duplicate chain names": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [
				{name: x, filter_chain_match: {destination_port: 1}}, {name: x, filter_chain_match: {destination_port: 2}}]}`,
			want: []string{`filter_chains[1].name: filter chain name "x" is already used by filter_chains[0]`},
		},
		"bad ranges": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{filter_chain_match: {
				prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 33}],
				source_prefix_ranges: [{address_prefix: ten}],
				direct_source_prefix_ranges: [{address_prefix: "::1", prefix_len: 129}]}}]}`,
			want: []string{
				"filter_chains[0].filter_chain_match.prefix_ranges[0].prefix_len: 33 is longer than an IPv4 address (32 bits)",
				"filter_chains[0].filter_chain_match.direct_source_prefix_ranges[0].prefix_len: 129 is longer than an IPv6 address (128 bits)",
				`filter_chains[0].filter_chain_match.source_prefix_ranges[0].address_prefix: "ten" is not an IP address`,
			},
		},
		"bad ports": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{filter_chain_match: {
				destination_port: 70000, source_ports: [0, 80]}}]}`,
			want: []string{
				"filter_chains[0].filter_chain_match.destination_port: 70000 is not a port (1 to 65535)",
				"filter_chains[0].filter_chain_match.source_ports[0]: 0 is not a port (1 to 65535)",
			},
		},
		"default chain with a match": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, default_filter_chain: {filter_chain_match: {destination_port: 1}}}`,
			want:   []string{"default_filter_chain.filter_chain_match: the default filter chain serves connections no other chain matches; it takes no filter_chain_match"},
		},
		"chain builder errors": {
			config: `{name: a, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{name: fail}], default_filter_chain: {name: fail}}`,
			want: []string{
				"filter_chains[0].filters[0].typed_config: broken on purpose",
				`default_filter_chain.name: filter chain name "fail" is already used by filter_chains[0]`,
				"default_filter_chain.filters[0].typed_config: broken on purpose",
			},
		},
		"every problem at once": {
			config: `{name: a, address: {socket_address: {address: x}}, filter_chains: [{name: fail}]}`,
			want: []string{
				`address.socket_address.address: "x" is not an IP address (listeners bind IP addresses, not names)`,
				"filter_chains[0].filters[0].typed_config: broken on purpose",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := stats.NewStore()
			_, err := Build(parseListener(t, tc.config), testDeps(store, 1))
			if err == nil {
				t.Fatal("Build succeeded")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if got := store.Counter("listener_manager.listener_added").Value(); got != 0 {
				t.Errorf("a failed listener was counted as added (%d)", got)
			}
		})
	}
}

func TestManagerStats(t *testing.T) {
	store := stats.NewStore()
	for i := range 2 {
		buildListener(t, store, 3, fmt.Sprintf(`{name: l%d, address: {socket_address: {address: 127.0.0.1}}, filter_chains: [{}]}`, i))
	}
	// Adding and activating are the listener manager's to count (the
	// server's): Build cannot tell a new listener from an update.
	want := map[string]uint64{"listener_added": 0, "listener_create_success": 0, "listener_stopped": 0, "listener_modified": 0}
	for name, v := range want {
		if got := store.Counter("listener_manager." + name).Value(); got != v {
			t.Errorf("listener_manager.%s = %d, want %d", name, got, v)
		}
	}
	if got := store.Gauge("listener_manager.total_listeners_active").Value(); got != 0 {
		t.Errorf("listener_manager.total_listeners_active = %d, want 0", got)
	}
}

func TestProtoAddress(t *testing.T) {
	tests := map[string]struct {
		addr net.Addr
		want string
	}{
		"ipv4":        {addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}, want: `{"socketAddress":{"address":"127.0.0.1","portValue":80}}`},
		"ipv6":        {addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 443}, want: `{"socketAddress":{"address":"::1","portValue":443}}`},
		"ipv6 any":    {addr: &net.TCPAddr{IP: net.IPv6unspecified, Port: 1}, want: `{"socketAddress":{"address":"::","portValue":1}}`},
		"ipv4 mapped": {addr: &net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 8}, want: `{"socketAddress":{"address":"10.0.0.1","portValue":8}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, err := protojson.Marshal(ProtoAddress(tc.addr))
			if err != nil {
				t.Fatal(err)
			}
			// protojson varies its spacing; compare without it.
			if got := strings.ReplaceAll(string(b), " ", ""); got != tc.want {
				t.Errorf("ProtoAddress = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAddressString(t *testing.T) {
	if got := AddressString(&corev3.SocketAddress{Address: "::1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}); got != "[::1]:80" {
		t.Errorf("AddressString = %q, want [::1]:80", got)
	}
}
