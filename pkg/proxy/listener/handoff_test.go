package listener

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestUseOriginalDstHandoff: a use_original_dst listener hands a
// connection whose restored destination another listener serves to that
// listener (exactly, else by its wildcard address), which counts it and
// serves it with its own chains; other connections stay.
func TestUseOriginalDstHandoff(t *testing.T) {
	store := stats.NewStore()
	var dst atomic.Value // the original destination the fake filter restores (a string)
	var all []*Listener
	deps := testDeps(store, 1)
	deps.BuildChain = func(fc *listenerv3.FilterChain, _ *Drain) (ConnHandler, error) {
		return addrChain{name: fc.GetName()}, nil
	}
	deps.OriginalDst = func() (listenerfilter.Filter, error) {
		return restoreFunc(func() string { return dst.Load().(string) }), nil
	}
	deps.Handoff = func(d netip.AddrPort) *Listener {
		var wildcard *Listener
		for _, l := range all {
			switch l.MatchAddress(d) {
			case ExactMatch:
				return l
			case WildcardMatch:
				wildcard = l
			}
		}
		return wildcard
	}
	build := func(text string) *Listener {
		l, err := Build(parseListener(t, text), deps)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, l)
		return l
	}
	outbound := build(`
name: outbound
stat_prefix: outbound
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
use_original_dst: true
filter_chains: [{name: passthrough}]`)
	exact := build(`
name: exact
stat_prefix: exact
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: exact}]`)
	wild := build(`
name: wild
stat_prefix: wild
address: {socket_address: {address: 0.0.0.0, port_value: 0}}
filter_chains: [{name: wild}]`)
	// A listener that binds nothing (bind_to_port: false) only takes
	// hand-offs.
	hold, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unboundAt := hold.Addr().String()
	_ = hold.Close()
	unbound := build(fmt.Sprintf(`
name: unbound
stat_prefix: unbound
bind_to_port: false
address: {socket_address: {address: 127.0.0.1, port_value: %s}}
filter_chains: [{name: unbound}]`, unboundAt[strings.LastIndex(unboundAt, ":")+1:]))
	if err := unbound.Bind(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = unbound.Serve() }()
	t.Cleanup(func() {
		unbound.Close()
		select {
		case <-unbound.Done():
		case <-timeAfter():
			t.Error("an unbound listener's Serve did not return after Close")
		}
	})
	if c, err := net.DialTimeout("tcp", unboundAt, ioTimeout); err == nil {
		_ = c.Close()
		t.Errorf("a listener with bind_to_port: false accepts connections on %s", unboundAt)
	}
	at := serve(t, outbound)
	exactAt := serve(t, exact)
	wildAt := serve(t, wild)
	wildPort := wildAt[strings.LastIndex(wildAt, ":")+1:]

	for _, tc := range []struct{ dst, want string }{
		{exactAt, "exact"},
		{"10.9.9.9:" + wildPort, "wild"},
		{unboundAt, "unbound"},
		{"10.9.9.9:1", "passthrough"},
	} {
		dst.Store(tc.dst)
		got := exchange(t, at, "hello")
		if name, _, _ := strings.Cut(got, " "); name != tc.want {
			t.Errorf("original destination %s: served by %q, want %s", tc.dst, got, tc.want)
		}
		if !strings.HasSuffix(got, " "+tc.dst) {
			t.Errorf("original destination %s: local address seen %q", tc.dst, got)
		}
	}
	for name, want := range map[string]uint64{
		"listener.exact.downstream_cx_total":             1,
		"listener.wild.downstream_cx_total":              1,
		"listener.outbound.downstream_cx_total":          1,
		"listener.outbound.downstream_pre_cx_active":     0,
		"listener.outbound.no_filter_chain_match":        0,
		"listener.exact.worker_0.downstream_cx_total":    1,
		"listener.outbound.worker_0.downstream_cx_total": 1,
	} {
		if got := counterOrGauge(store, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	eventually(t, "connections closed", func() bool {
		return outbound.ActiveConnections() == 0 && exact.ActiveConnections() == 0 && wild.ActiveConnections() == 0
	})
}

// restoreFunc is an original_dst filter that restores the address it
// returns.
type restoreFunc func() string

func (f restoreFunc) OnAccept(s *listenerfilter.Socket) error {
	return fakeFilter{local: f()}.OnAccept(s)
}

// counterOrGauge reads a counter, or a gauge when the name is one.
func counterOrGauge(store *stats.Store, name string) uint64 {
	if strings.HasSuffix(name, "_active") {
		return uint64(store.Gauge(name).Value())
	}
	return store.Counter(name).Value()
}
