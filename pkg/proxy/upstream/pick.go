package upstream

import (
	"net"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// PickContext is what a load balancer may read of the downstream side of
// one pick, as Envoy's load balancer context offers it: the downstream
// connection and, for HTTP, the request headers, and the hash key of the
// route's or the tcp_proxy's hash_policy. The ORIGINAL_DST cluster reads
// the first two, the hash-based load balancers (ring hash, maglev) the
// hash. A nil *PickContext has no downstream (a gRPC channel's dial).
// It belongs to one pick: the balancer may fill Hash in from Hasher.
type PickContext struct {
	// OriginalDst is the downstream connection's local address when a
	// listener restored it (the original_dst listener filter, or a
	// use_original_dst listener); the zero value when none did.
	OriginalDst netip.AddrPort
	// FilterState reads the pick's filter state: the request's, read
	// through to its connection's, or the connection's for a TCP pick;
	// nil for none. An ORIGINAL_DST cluster prefers the address it holds
	// under envoy.network.transport_socket.original_dst_address to every
	// other source, as Envoy's.
	FilterState FilterStateReader
	// Headers are the request headers of an HTTP pick, nil for a TCP one.
	Headers HeaderGetter
	// Authority is an HTTP pick's :authority (Host), "" for a TCP one;
	// ServerName is the downstream connection's requested server name
	// (TLS SNI), "" for none; DynamicPort is the port the SNI dynamic
	// forward proxy filter chose for the connection (Envoy's filter state
	// envoy.upstream.dynamic_port), 0 for none. A dynamic forward proxy
	// cluster picks its host by them.
	Authority   string
	ServerName  string
	DynamicPort uint32
	// Hash is the pick's hash key when HasHash is set: what the hash
	// policy yields. Without one the hash-based balancers pick at random,
	// as Envoy's do. Read it with RequestHash.
	Hash    uint64
	HasHash bool
	// Hasher, when not nil, computes Hash on first use instead: the HTTP
	// router's hash policy runs only for a balancer that reads the hash,
	// as Envoy's computeHashKey does, since it may generate a cookie.
	Hasher Hasher
	// DynamicMetadata is an HTTP pick's request dynamic metadata (what
	// filters recorded), nil for none: an ORIGINAL_DST cluster with
	// original_dst_lb_config.metadata_key reads its host there.
	DynamicMetadata *corev3.Metadata
	// MetadataMatch is the route's metadata_match criteria (merged with
	// its weighted cluster's), which choose the subset of a cluster with
	// lb_subset_config; nil when the route has none.
	MetadataMatch *MetadataMatch
	// The retry host predicates of the request's retry policy: while
	// they refuse a pick, the cluster picks again, up to
	// HostReselections more times, then keeps its last pick (Envoy's
	// host_selection_retry_max_attempts). PreviousHosts are the hosts
	// the previous attempts went to (previous_hosts); OmitCanary refuses
	// canary hosts (omit_canary_hosts); OmitMetadata, when not nil,
	// refuses hosts whose envoy.lb metadata has each of its fields
	// (omit_host_metadata).
	PreviousHosts    []*Host
	OmitCanary       bool
	OmitMetadata     *structpb.Struct
	HostReselections int
	// ExcludedPriorities, when not nil, are the priority levels the
	// retry priority (previous_priorities) leaves out: level i is
	// skipped when ExcludedPriorities[i] is set, the other levels sharing
	// the load by their availability; when no level is left, the load is
	// the cluster's own.
	ExcludedPriorities []bool
	// ForceLevel, when set, makes the balancer pick from priority level
	// Level, among its degraded hosts when LevelDegraded is set, else its
	// healthy ones (its panic mode still applies): the aggregate
	// cluster's choice of level, handed to the cluster it chose (Envoy's
	// AggregateLoadBalancerContext). A level the balancer does not have
	// yields no host.
	ForceLevel    bool
	Level         int
	LevelDegraded bool
	// Override is the host the request asks for by address (the stateful
	// session filter's), Address "" for none; the cluster records what
	// became of it in OverrideOutcome.
	Override        OverrideHost
	OverrideOutcome OverrideOutcome
}

// Hasher computes the hash key of a pick on demand.
type Hasher interface {
	// PickHash returns the hash key, and false when the hash policy
	// yields none.
	PickHash() (uint64, bool)
}

// RequestHash returns the pick's hash key, and false when it has none; it
// runs Hasher on its first call. A nil context has no hash.
func (pc *PickContext) RequestHash() (uint64, bool) {
	if pc == nil {
		return 0, false
	}
	if h := pc.Hasher; h != nil {
		pc.Hasher = nil
		pc.Hash, pc.HasHash = h.PickHash()
	}
	return pc.Hash, pc.HasHash
}

// Rejects reports whether a retry host predicate turns h down.
func (pc *PickContext) Rejects(h *Host) bool {
	for _, p := range pc.PreviousHosts {
		if p == h {
			return true
		}
	}
	if pc.OmitCanary && h.Canary {
		return true
	}
	return pc.OmitMetadata != nil && lbMetadataMatches(pc.OmitMetadata, h)
}

// lbMetadataMatches reports whether every field of want is in h's
// envoy.lb metadata with an equal value, or, for a list there, as one of
// its elements (Envoy's metadataLabelMatch with list_as_any).
func lbMetadataMatches(want *structpb.Struct, h *Host) bool {
	lb := h.Metadata.GetFilterMetadata()["envoy.lb"]
	for k, v := range want.GetFields() {
		got, ok := lb.GetFields()[k]
		if !ok {
			return false
		}
		if proto.Equal(got, v) {
			continue
		}
		l, isList := got.GetKind().(*structpb.Value_ListValue)
		if !isList || !listHas(l.ListValue, v) {
			return false
		}
	}
	return true
}

// listHas reports whether l has an element equal to v.
func listHas(l *structpb.ListValue, v *structpb.Value) bool {
	for _, e := range l.GetValues() {
		if proto.Equal(e, v) {
			return true
		}
	}
	return false
}

// HeaderGetter reads one request header by its lower-case name; several
// fields of one name come back joined by ",".
type HeaderGetter interface {
	Get(name string) (string, bool)
}

// FilterStateReader reads a stream's filter state by key.
type FilterStateReader interface {
	FilterState(key string) (any, bool)
}

// localRestorer is a downstream connection that knows whether a listener
// restored its local address (*listener.Conn).
type localRestorer interface {
	LocalAddrRestored() bool
	LocalAddr() net.Addr
}

// OriginalDst returns the restored local address of a downstream
// connection, looking through wrappers (TLS) that expose the connection
// they wrap with NetConn; false when no listener restored it.
func OriginalDst(c net.Conn) (netip.AddrPort, bool) {
	r, ok := wrapped[localRestorer](c)
	if !ok || !r.LocalAddrRestored() {
		return netip.AddrPort{}, false
	}
	ta, ok := r.LocalAddr().(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// wrapped finds the connection of type T that c is or wraps, looking
// through wrappers (TLS) that expose the connection they wrap with
// NetConn; false when there is none.
func wrapped[T any](c net.Conn) (T, bool) {
	for range 4 { // a TLS connection over a listener's: two levels at most
		if t, ok := c.(T); ok {
			return t, true
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	var zero T
	return zero, false
}
