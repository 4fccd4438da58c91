package listener

import (
	"bufio"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// addrChain answers one line with its name and the connection's remote
// and local addresses, then closes.
type addrChain struct{ name string }

func (h addrChain) HandleConn(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		return
	}
	_, _ = c.Write([]byte(h.name + " " + c.RemoteAddr().String() + " " + c.LocalAddr().String() + "\n"))
}

// fakeFilter restores fixed addresses, or rejects, or waits for a byte
// that never comes (the timeout).
type fakeFilter struct {
	remote, local string
	reject, wait  bool
}

func (f fakeFilter) OnAccept(s *listenerfilter.Socket) error {
	switch {
	case f.reject:
		return listenerfilter.ErrRejected
	case f.wait:
		_, err := s.Peek(make([]byte, 64), 64)
		return err
	}
	if f.remote != "" {
		s.SetRemoteAddr(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(f.remote)))
	}
	if f.local != "" {
		s.SetLocalAddr(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(f.local)))
	}
	return nil
}

// lfListener builds a listener whose listener filters are fs.
func lfListener(t *testing.T, store *stats.Store, text string, fs ...fakeFilter) *Listener {
	t.Helper()
	deps := testDeps(store, 1)
	deps.BuildChain = func(fc *listenerv3.FilterChain, _ *Drain) (ConnHandler, error) {
		return addrChain{name: fc.GetName()}, nil
	}
	i := 0
	deps.BuildListenerFilter = func(*listenerv3.ListenerFilter) (listenerfilter.Filter, error) {
		f := fs[i]
		i++
		return f, nil
	}
	l, err := Build(parseListener(t, text), deps)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

const lfBase = `
name: lf
stat_prefix: lf
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains:
- name: restored
  filter_chain_match:
    direct_source_prefix_ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]
    source_prefix_ranges: [{address_prefix: 203.0.113.0, prefix_len: 24}]
- name: peer
  filter_chain_match:
    direct_source_prefix_ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]
    source_prefix_ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]
`

func TestListenerFiltersRestoreAddressesBeforeTheChainMatch(t *testing.T) {
	store := stats.NewStore()
	l := lfListener(t, store, lfBase+"listener_filters: [{name: a}, {name: b}]",
		fakeFilter{remote: "203.0.113.7:5000"}, fakeFilter{local: "198.51.100.1:443"})
	addr := serve(t, l)
	got := exchange(t, addr, "hi")
	if got != "restored 203.0.113.7:5000 198.51.100.1:443" {
		t.Fatalf("answer %q: want the restored chain with the restored addresses", got)
	}
	if v := store.Counter("listener.lf.downstream_cx_total").Value(); v != 1 {
		t.Errorf("downstream_cx_total = %d, want 1", v)
	}
}

func TestListenerFiltersReject(t *testing.T) {
	store := stats.NewStore()
	l := lfListener(t, store, lfBase+"listener_filters: [{name: a}]", fakeFilter{reject: true})
	addr := serve(t, l)
	if got := exchange(t, addr, "hi"); got != "" {
		t.Fatalf("a rejected connection got %q", got)
	}
	eventually(t, "the connection's end", func() bool { return l.ActiveConnections() == 0 })
	if v := store.Counter("listener.lf.downstream_cx_total").Value(); v != 0 {
		t.Errorf("downstream_cx_total = %d, want 0", v)
	}
}

func TestListenerFiltersTimeout(t *testing.T) {
	for _, cont := range []bool{false, true} {
		store := stats.NewStore()
		cfg := lfBase + "listener_filters_timeout: 0.05s\nlistener_filters: [{name: a}]\n"
		if cont {
			cfg += "continue_on_listener_filters_timeout: true\n"
		}
		l := lfListener(t, store, cfg, fakeFilter{wait: true})
		addr := serve(t, l)
		c, err := net.DialTimeout("tcp", addr, ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the timeout", func() bool { return store.Counter("listener.lf.downstream_pre_cx_timeout").Value() == 1 })
		got := roundTrip(t, c, "hi")
		_ = c.Close()
		want := ""
		if cont {
			want = "peer " + c.LocalAddr().String() + " " + addr
		}
		if got != want {
			t.Errorf("continue=%v: answer %q, want %q", cont, got, want)
		}
		if v := store.Gauge("listener.lf.downstream_pre_cx_active").Value(); v != 0 {
			t.Errorf("downstream_pre_cx_active = %d, want 0", v)
		}
	}
}

// The listener's own accept path is untouched without listener filters.
func TestNoListenerFilters(t *testing.T) {
	store := stats.NewStore()
	l := lfListener(t, store, lfBase)
	addr := serve(t, l)
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := roundTrip(t, c, "hi"); !strings.HasPrefix(got, "peer 127.0.0.1:") {
		t.Errorf("answer %q, want the peer chain", got)
	}
}
