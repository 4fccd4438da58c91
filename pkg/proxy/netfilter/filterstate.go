package netfilter

import (
	"net"
	"sync"
)

// The connection filter state keys Outrigger's filters share, Envoy's.
const (
	// ClusterStateKey names the cluster tcp_proxy sends the connection to
	// (a string), in place of its own: sni_cluster sets it.
	ClusterStateKey = "envoy.tcp_proxy.cluster"
	// DynamicPortStateKey is the port a dynamic forward proxy cluster
	// connects to (a uint32): the SNI dynamic forward proxy filter sets
	// it.
	DynamicPortStateKey = "envoy.upstream.dynamic_port"
	// DynamicHostStateKey is the host a dynamic forward proxy cluster
	// connects to (a string), in place of the request's Host or the
	// connection's server name.
	DynamicHostStateKey = "envoy.upstream.dynamic_host"
	// UpstreamAddressStateKey is the address a dynamic forward proxy
	// filter resolved its host to (a filterstate.Address), with
	// save_upstream_address.
	UpstreamAddressStateKey = "envoy.stream.upstream_address"
)

// FilterStater is a connection that keeps Envoy's connection filter
// state: values the read filters leave for the filters after them.
type FilterStater interface {
	// SetFilterState keeps v under key for the connection's life.
	SetFilterState(key string, v any)
	// FilterState returns the value under key, false when there is none.
	FilterState(key string) (any, bool)
}

// FilterStateOf returns c's value under key, false when c keeps none.
func FilterStateOf(c net.Conn, key string) (any, bool) {
	if fs, ok := c.(FilterStater); ok {
		return fs.FilterState(key)
	}
	return nil, false
}

// ConnState is a connection's filter state, for the connections that keep
// one (embed it). The zero value is empty; it is safe for concurrent use.
type ConnState struct {
	mu sync.Mutex
	m  map[string]any
}

// SetFilterState implements FilterStater.
func (s *ConnState) SetFilterState(key string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]any{}
	}
	s.m[key] = v
}

// FilterState implements FilterStater.
func (s *ConnState) FilterState(key string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}
