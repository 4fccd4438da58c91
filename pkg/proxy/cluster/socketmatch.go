package cluster

import (
	"sort"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// socketMatchFilter is the metadata filter whose values
// transport_socket_matches compare (Envoy's
// envoy.transport_socket_match).
const socketMatchFilter = "envoy.transport_socket_match"

// socketMatches are a cluster's transport_socket_matches: each host
// connects with the first entry whose labels its endpoint metadata has,
// else the first whose labels its locality's metadata has, else with the
// cluster's transport_socket, as Envoy's TransportSocketMatcher chooses
// (Istio's auto mTLS: hosts labelled tlsMode: istio get mutual TLS).
type socketMatches struct {
	list []socketMatch
	// hc is the socket the health checks connect with when the health
	// check has transport_socket_match_criteria (hcSet), resolved from
	// them once: Envoy resolves the criteria as an endpoint's metadata,
	// without a locality's. Without criteria, checks use each host's
	// socket.
	hc    int
	hcSet bool
}

// socketMatch is one transport_socket_matches entry, compiled.
type socketMatch struct {
	name   string
	labels []socketLabel
	// tls is the entry's upstream TLS, nil for plaintext (raw_buffer).
	tls *tlsconfig.Client
}

// socketLabel is one field of an entry's match: the metadata value under
// key must equal value.
type socketLabel struct {
	key   string
	value *structpb.Value
}

// buildSocketMatches compiles a cluster's transport_socket_matches and
// its health check's transport_socket_match_criteria. Their transport
// sockets are TLS or raw_buffer: a tap, an upstream PROXY protocol or an
// internal_upstream socket (whose pool keys, registrations and metadata
// are the cluster's) is refused in them, and in the cluster's
// transport_socket when it has matches. Errors are relative to the cluster.
func buildSocketMatches(cfg *clusterv3.Cluster, d transportDeps, scope string, def transport) (socketMatches, []error) {
	var (
		m    socketMatches
		errs []error
	)
	for i, e := range cfg.GetTransportSocketMatches() {
		path := index("transport_socket_matches", i)
		if e.GetTransportSocket() == nil {
			errs = append(errs, configErrorf(join(path, "transport_socket"), "required: the transport socket of the hosts this entry matches"))
			continue
		}
		t, terrs := buildTransportAt(e.GetTransportSocket(), d, scope, join(path, "transport_socket")+".")
		if t.tap != nil {
			_ = t.tap.Close()
			terrs = append(terrs, configErrorf(join(path, "transport_socket"), "a tap transport socket is not supported in transport_socket_matches"))
		}
		if t.pp != nil {
			terrs = append(terrs, configErrorf(join(path, "transport_socket"), "an upstream PROXY protocol transport socket is not supported in transport_socket_matches"))
		}
		if t.iu != nil {
			terrs = append(terrs, configErrorf(join(path, "transport_socket"), "an internal_upstream transport socket is not supported in transport_socket_matches"))
		}
		if t.h11 != nil {
			terrs = append(terrs, configErrorf(join(path, "transport_socket"), "an http_11_proxy transport socket is not supported in transport_socket_matches"))
		}
		if t.tcpStats != nil {
			terrs = append(terrs, configErrorf(join(path, "transport_socket"), "a tcp_stats transport socket is not supported in transport_socket_matches"))
		}
		if len(terrs) > 0 {
			errs = append(errs, terrs...)
			continue
		}
		fields := e.GetMatch().GetFields()
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sm := socketMatch{name: e.GetName(), tls: t.tls}
		for _, k := range keys {
			sm.labels = append(sm.labels, socketLabel{key: k, value: fields[k]})
		}
		m.list = append(m.list, sm)
	}
	if len(cfg.GetTransportSocketMatches()) > 0 {
		if def.tap != nil {
			errs = append(errs, configErrorf("transport_socket", "a tap transport socket is not supported with transport_socket_matches"))
		}
		if def.pp != nil {
			errs = append(errs, configErrorf("transport_socket", "an upstream PROXY protocol transport socket is not supported with transport_socket_matches"))
		}
		if def.iu != nil {
			errs = append(errs, configErrorf("transport_socket", "an internal_upstream transport socket is not supported with transport_socket_matches"))
		}
		if def.h11 != nil {
			errs = append(errs, configErrorf("transport_socket", "an http_11_proxy transport socket is not supported with transport_socket_matches"))
		}
		if def.tcpStats != nil {
			errs = append(errs, configErrorf("transport_socket", "a tcp_stats transport socket is not supported with transport_socket_matches"))
		}
	}
	if hcs := cfg.GetHealthChecks(); len(hcs) > 0 && hcs[0].GetTransportSocketMatchCriteria() != nil {
		md := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{socketMatchFilter: hcs[0].GetTransportSocketMatchCriteria()}}
		m.hc, m.hcSet = m.resolve(md, nil), true
	}
	return m, errs
}

// resolve is the socket of a host with endpoint metadata ep and locality
// metadata loc: i for the i-th match (from 1), 0 for the cluster's
// transport_socket.
func (m *socketMatches) resolve(ep, loc *corev3.Metadata) int {
	for i := range m.list {
		if m.list[i].matches(ep) {
			return i + 1
		}
	}
	for i := range m.list {
		if m.list[i].matches(loc) {
			return i + 1
		}
	}
	return 0
}

// matches reports whether md has every label of the entry under
// envoy.transport_socket_match, as Envoy's metadataLabelMatch (a list is
// a value like any other): an entry without labels matches every host,
// metadata or not.
func (sm *socketMatch) matches(md *corev3.Metadata) bool {
	s, ok := md.GetFilterMetadata()[socketMatchFilter]
	if !ok {
		return len(sm.labels) == 0
	}
	fields := s.GetFields()
	for _, l := range sm.labels {
		v, ok := fields[l.key]
		if !ok || !proto.Equal(v, l.value) {
			return false
		}
	}
	return true
}

// anyTLS reports whether one of the matches is TLS.
func (m *socketMatches) anyTLS() bool {
	for i := range m.list {
		if m.list[i].tls != nil {
			return true
		}
	}
	return false
}

// socketCounters are the cluster.<name>.<match name>.total_match_count
// counters of a cluster with transport_socket_matches, index 0 being
// cluster.<name>.default.total_match_count (the cluster's
// transport_socket); nil without matches.
type socketCounters []*stats.Counter

// newSocketCounters makes the counters of the matches s.
func newSocketCounters(scope stats.Scope, s *socketMatches) socketCounters {
	if len(s.list) == 0 {
		return nil
	}
	out := make(socketCounters, len(s.list)+1)
	out[0] = scope.Counter("default.total_match_count")
	for i := range s.list {
		out[i+1] = scope.Counter(s.list[i].name + ".total_match_count")
	}
	return out
}

// chooseSocket sets the socket of h, a host joining the cluster, and
// counts the choice, as Envoy resolves a host's transport socket when it
// creates the host.
func (c *Cluster) chooseSocket(h *upstream.Host) {
	if len(c.socketCounts) == 0 {
		return
	}
	h.Socket = c.settings.sockets.resolve(h.Metadata, h.LocalityMetadata)
	c.socketCounts[h.Socket].Inc()
}

// tlsOf is the upstream TLS of h's connections, nil for plaintext.
func (c *Cluster) tlsOf(h *upstream.Host) *tlsconfig.Client {
	return c.tlsOfSocket(h.Socket)
}

// tlsOfSocket is the upstream TLS of socket i (see upstream.Host.Socket).
func (c *Cluster) tlsOfSocket(i int) *tlsconfig.Client {
	if i <= 0 || i > len(c.settings.sockets.list) {
		return c.settings.tls
	}
	return c.settings.sockets.list[i-1].tls
}

// checkTLS is the upstream TLS of h's health check connections: that of
// the socket transport_socket_match_criteria chose, else h's own.
func (c *Cluster) checkTLS(h *upstream.Host) *tlsconfig.Client {
	if s := &c.settings.sockets; s.hcSet {
		return c.tlsOfSocket(s.hc)
	}
	return c.tlsOf(h)
}

// countCheckSocket counts the socket transport_socket_match_criteria
// chose once more, for a new check connection: Envoy resolves the
// criteria for each.
func (c *Cluster) countCheckSocket() {
	if s := &c.settings.sockets; s.hcSet && len(c.socketCounts) > 0 {
		c.socketCounts[s.hc].Inc()
	}
}
