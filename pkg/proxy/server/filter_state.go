package server

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// chainStates are the netfilter.States of a listener's network filters,
// by filter chain. When a listener update changes only filter chains,
// Envoy updates the listener in place and keeps the chains that did not
// change, their filters' counts and buckets with them; Outrigger replaces
// the whole listener, and hands the filters of such chains the States of
// the filters they replace.
type chainStates struct {
	chains []*listenerv3.FilterChain
	states [][]*netfilter.State
	// prev are the replaced listener's, while the listener is built, when
	// Envoy would have updated it in place; nil otherwise.
	prev *chainStates
}

// forChain returns the States of fc's filters, one per filter: those of
// an identical chain of the replaced listener, else new ones.
func (cs *chainStates) forChain(fc *listenerv3.FilterChain) []*netfilter.State {
	var states []*netfilter.State
	if cs.prev != nil {
		for i, old := range cs.prev.chains {
			if proto.Equal(old, fc) {
				states = cs.prev.states[i]
				break
			}
		}
	}
	if states == nil {
		states = make([]*netfilter.State, len(fc.GetFilters()))
		for i := range states {
			states[i] = &netfilter.State{}
		}
	}
	cs.chains = append(cs.chains, fc)
	cs.states = append(cs.states, states)
	return states
}

// updatesInPlace reports whether Envoy would update the listener old to
// lc in place: lc has filter chains, and only filter_chains,
// default_filter_chain and filter_chain_matcher differ.
func updatesInPlace(old, lc *listenerv3.Listener) bool {
	if len(lc.GetFilterChains()) == 0 {
		return false
	}
	a, b := proto.CloneOf(old), proto.CloneOf(lc)
	a.FilterChains, a.DefaultFilterChain, a.FilterChainMatcher = nil, nil, nil
	b.FilterChains, b.DefaultFilterChain, b.FilterChainMatcher = nil, nil, nil
	return proto.Equal(a, b)
}
