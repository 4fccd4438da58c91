package server

import (
	"net/netip"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	odv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// originalDstFilter builds the original_dst listener filter a
// use_original_dst listener runs, through the extension registry like a
// configured one (so that disabling the extension disables this too).
func (s *Server) originalDstFilter() (listenerfilter.Filter, error) {
	cfg, err := anypb.New(&odv3.OriginalDst{})
	if err != nil {
		return nil, err
	}
	return s.buildListenerFilter(&listenerv3.ListenerFilter{Name: "envoy.filters.listener.original_dst", ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: cfg}})
}

// handoffListener finds the active listener serving an original
// destination for a use_original_dst listener: one bound to exactly that
// address, else one on a wildcard address with its port; nil for none.
func (s *Server) handoffListener(dst netip.AddrPort) *listener.Listener {
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	var wildcard *listener.Listener
	for _, bl := range s.lset.active {
		switch bl.MatchAddress(dst) {
		case listener.ExactMatch:
			return bl.Listener
		case listener.WildcardMatch:
			if wildcard == nil {
				wildcard = bl.Listener
			}
		}
	}
	return wildcard
}
