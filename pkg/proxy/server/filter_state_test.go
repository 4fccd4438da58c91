package server

import (
	"testing"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestUpdatesInPlace(t *testing.T) {
	chain := func(name string) *listenerv3.FilterChain {
		return &listenerv3.FilterChain{Name: name, Filters: []*listenerv3.Filter{{Name: "a"}, {Name: "b"}}}
	}
	base := &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("x")}}
	tests := map[string]struct {
		lc   *listenerv3.Listener
		want bool
	}{
		"only filter chains change": {lc: &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("x"), chain("y")},
			DefaultFilterChain: chain("d")}, want: true},
		"the filter_chain_matcher changes": {lc: &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("x")},
			FilterChainMatcher: &xdsmatcherv3.Matcher{}}, want: true},
		"a listener field changes": {lc: &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("x")},
			PerConnectionBufferLimitBytes: wrapperspb.UInt32(1)}},
		"no filter chains": {lc: &listenerv3.Listener{Name: "l", DefaultFilterChain: chain("x")}},
		"the address changes": {lc: &listenerv3.Listener{Name: "l", FilterChains: []*listenerv3.FilterChain{chain("x")},
			Address: &corev3.Address{}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := updatesInPlace(base, tc.lc); got != tc.want {
				t.Errorf("updatesInPlace = %v, want %v", got, tc.want)
			}
		})
	}
	if len(base.GetFilterChains()) != 1 {
		t.Error("updatesInPlace changed the listener it was given")
	}
}

func TestChainStates(t *testing.T) {
	x := &listenerv3.FilterChain{Name: "x", Filters: []*listenerv3.Filter{{Name: "a"}, {Name: "b"}}}
	y := &listenerv3.FilterChain{Name: "y", Filters: []*listenerv3.Filter{{Name: "a"}}}
	old := &chainStates{}
	ox, oy := old.forChain(x), old.forChain(y)
	if len(ox) != 2 || len(oy) != 1 || ox[0] == ox[1] {
		t.Fatalf("states %v, %v: want one of its own per filter", ox, oy)
	}
	y2 := &listenerv3.FilterChain{Name: "y", Filters: []*listenerv3.Filter{{Name: "changed"}}}
	next := &chainStates{prev: old}
	if nx := next.forChain(&listenerv3.FilterChain{Name: "x", Filters: []*listenerv3.Filter{{Name: "a"}, {Name: "b"}}}); nx[0] != ox[0] || nx[1] != ox[1] {
		t.Error("an unchanged chain did not keep its filters' states")
	}
	if ny := next.forChain(y2); ny[0] == oy[0] {
		t.Error("a changed chain kept its filters' states")
	}
	if fresh := (&chainStates{}).forChain(x); fresh[0] == ox[0] {
		t.Error("a chain with no replaced listener got another's states")
	}
}
