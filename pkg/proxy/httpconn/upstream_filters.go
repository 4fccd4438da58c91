package httpconn

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Upstream HTTP filters (Envoy's upstream filter chain): the cluster's
// http_protocol_options.http_filters, else the router's
// upstream_http_filters. The chain runs on each attempt, once its host is
// picked (a retry or a hedged attempt runs it again), on the request head
// as it goes upstream: after the router's own edits (route header
// mutations, x-envoy-attempt-count), in place, so that, as in Envoy, what
// one attempt's filters changed is what the next attempt's start from.
// The response head the attempt brings back runs through the chain in
// reverse order before the router's response edits and the downstream
// filters. A shadow (request_mirror_policies) runs the chain of its
// cluster (else the router's) on its copy of the request. A request the route terminates as a CONNECT tunnel does not run
// it, as in Envoy. The upstream-capable filters (httpfilter.UpstreamCapable)
// keep no state per attempt, so the response is encoded by the chain's
// shared filters: what a hedged request's winner ran is what every attempt
// ran.

// upstreamRouter is the router configuration's upstream chain.
type upstreamRouter interface {
	UpstreamFilters() *httpfilter.UpstreamChain
}

// upstreamFilterer is a cluster with its own upstream chain.
type upstreamFilterer interface {
	UpstreamFilters() *httpfilter.UpstreamChain
}

// upstreamChain is the upstream chain of an attempt on cl (the route's
// cluster): the cluster's, else the router's; nil without one.
func (s *stream) upstreamChain(cl UpstreamCluster) *httpfilter.UpstreamChain {
	if uf, ok := cl.(upstreamFilterer); ok {
		if c := uf.UpstreamFilters(); c != nil {
			return c
		}
	}
	return s.filterChain().upstream
}

// decodeUpstream runs the attempt's upstream chain on the request head,
// in order, and keeps the chain for the response. The upstream-capable
// filters never answer a request: their Status is not looked at.
func (s *stream) decodeUpstream(route *router.Route) {
	s.upChain = nil
	c := s.upstreamChain(s.cluster)
	if c == nil || route.TerminatesTunnel(s.method, s.upg.connect) {
		return
	}
	s.upChain = c
	for i := range c.Filters {
		if d, ok := c.Filters[i].Config.NewFilter().(httpfilter.Decoder); ok {
			d.DecodeHeaders(s)
		}
	}
}

// shadowFilterStream is the stream as a shadow's upstream filters see it:
// the shadow's own copy of the request headers.
type shadowFilterStream struct {
	*stream
	h *headerList
}

// RequestHeaders implements httpfilter.Stream: the shadow's headers.
func (f shadowFilterStream) RequestHeaders() router.HeaderEditor { return f.h }

// decodeShadow runs an upstream chain on a shadow's request headers, h;
// the shadow's response is not relayed, so the chain never encodes.
func (s *stream) decodeShadow(c *httpfilter.UpstreamChain, h *headerList) {
	fs := shadowFilterStream{stream: s, h: h}
	for i := range c.Filters {
		if d, ok := c.Filters[i].Config.NewFilter().(httpfilter.Decoder); ok {
			d.DecodeHeaders(fs)
		}
	}
}

// encodeUpstream runs the attempt's upstream chain on the response head
// it brought back, in reverse order.
func (s *stream) encodeUpstream() {
	c := s.upChain
	if c == nil {
		return
	}
	for i := len(c.Filters) - 1; i >= 0; i-- {
		if e, ok := c.Filters[i].Config.NewFilter().(httpfilter.Encoder); ok {
			e.EncodeHeaders(s)
		}
	}
}
