package cluster

import (
	"net/netip"
	"slices"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// hostReuse finds, for a load assignment's endpoints, the EDS cluster's
// current hosts that are identical to them in everything a host holds,
// so that such an endpoint keeps its host, as Envoy keeps a host whose
// address is unchanged: its stats (/clusters), health, outlier monitor,
// connection pool and slow-start place stay, and an update that changes
// one endpoint of many builds one host. A host changed in any setting is
// built anew, as before. Each host is taken once, so an address listed
// twice still makes two hosts.
//
// Endpoints usually come back in the same order, so each is first
// compared with the current host at the same place of its priority level
// (or the next one, after a removal); only those left over are looked up
// by address among the hosts left over (takeMoved). The work is one
// comparison per endpoint plus a lookup per endpoint that moved or
// changed. A nil *hostReuse reuses nothing.
//
// Before all that, an entry that is the very message a host was built
// from (edsSources) is that host, found by place alone (takeSource).
type hostReuse struct {
	base   *hostSet           // the current set
	levels [][]*upstream.Host // the current hosts by priority
	cursor []int              // per level, the next host in order
	used   [][]bool           // per level, the hosts taken
	// sources are the entries the current hosts were built from, per
	// level, and the index in descs of their groups; nil when unknown.
	sources [][]*endpointv3.LbEndpoint
	groups  [][]uint32
	descs   []sourceGroup
	// fresh are the hosts built anew for the update (not taken).
	fresh []*upstream.Host
}

// setChange is what an EDS update knows of the host set it replaces: the
// hosts of base it did not take (gone) and the ones it built anew
// (added); every other host of base is in the new set, and every other
// host of the new set was base's. Installing it in place of base can then
// update base's HTTP/1.1 pools rather than rebuild them
// (http1Pools.changed).
type setChange struct {
	base  *hostSet
	gone  []*upstream.Host
	added []*upstream.Host
	// exact is set by the install once it knows that the new set is the
	// update's hosts alone: no removed host stayed for its health.
	exact bool
}

// change is the reuse's setChange, once every endpoint took its host;
// nil without a current set.
func (r *hostReuse) change() *setChange {
	if r == nil {
		return nil
	}
	ch := &setChange{base: r.base, added: r.fresh}
	for p, level := range r.levels {
		for c, h := range level {
			if !r.used[p][c] {
				ch.gone = append(ch.gone, h)
			}
		}
	}
	return ch
}

// appliesTo reports whether ch describes the replacement of old: the set
// may have changed since the update was built (a health change removed a
// host), and then ch says nothing.
func (ch *setChange) appliesTo(old *hostSet) bool {
	return ch != nil && old != nil && ch.base == old
}

// withSources lets entries that built the current hosts take them by
// place (takeSource). src must be the sources of the installed set: a
// level whose hosts are not src's at the same places is left to the
// comparisons.
func (r *hostReuse) withSources(src *edsSources) {
	if r == nil || src == nil {
		return
	}
	r.sources = make([][]*endpointv3.LbEndpoint, len(r.levels))
	r.groups, r.descs = make([][]uint32, len(r.levels)), src.descs
	for p, level := range r.levels {
		// The installed level may have more hosts (removed ones kept
		// for their health) after src's; the places must agree.
		if p < len(src.hosts) && len(src.hosts[p]) <= len(level) && len(src.entries[p]) == len(src.hosts[p]) &&
			(len(level) == 0 || len(src.hosts[p]) == 0 || &level[0] == &src.hosts[p][0] || samePlaces(level, src.hosts[p])) {
			r.sources[p], r.groups[p] = src.entries[p], src.groups[p]
		}
	}
}

// samePlaces reports whether level starts with hosts, host for host.
func samePlaces(level, hosts []*upstream.Host) bool {
	for i, h := range hosts {
		if level[i] != h {
			return false
		}
	}
	return true
}

// groupMatch tells, for each group the current hosts were built from
// (descs), whether it gave its hosts what g gives them; nil without
// sources. An assignment's entries are looked up by group (takeSource),
// so this is done once per group rather than once per entry.
func (r *hostReuse) groupMatch(g sourceGroup) []bool {
	if r == nil || r.sources == nil {
		return nil
	}
	match := make([]bool, len(r.descs))
	for i := range r.descs {
		match[i] = r.descs[i] == g
	}
	return match
}

// takeSource returns the current host that lbe built if lbe is at its
// place in the level's order (or one further, after a removal) and the
// group it was built in gave it what lbe's group gives (match, from
// groupMatch: the same priority p, locality, locality weight and
// locality metadata message), and marks it taken; nil otherwise. The
// message passed every check when it built the host, and messages do
// not change. The host itself is not read: a pass over 10,000 hosts'
// memory was most of a one-endpoint change's cost here.
func (r *hostReuse) takeSource(lbe *endpointv3.LbEndpoint, p uint32, match []bool) *upstream.Host {
	if r == nil || r.sources == nil || int(p) >= len(r.sources) {
		return nil
	}
	src, groups, level, used := r.sources[p], r.groups[p], r.levels[p], r.used[p]
	for c := r.cursor[p]; c < len(src) && c <= r.cursor[p]+1; c++ {
		if src[c] != lbe || used[c] {
			continue
		}
		if g := groups[c]; int(g) >= len(match) || !match[g] {
			return nil
		}
		used[c] = true
		r.cursor[p] = c + 1
		return level[c]
	}
	return nil
}

// newHostReuse prepares the reuse of a host set's hosts; nil without one.
func newHostReuse(hs *hostSet) *hostReuse {
	if hs == nil || len(hs.hosts) == 0 {
		return nil
	}
	r := &hostReuse{base: hs, levels: hs.priorities, cursor: make([]int, len(hs.priorities)), used: make([][]bool, len(hs.priorities))}
	for i, level := range hs.priorities {
		r.used[i] = make([]bool, len(level))
	}
	return r
}

// take returns the current host identical to ep's if it is where ep is in
// its level's order (or one further), and marks it taken; nil otherwise.
func (r *hostReuse) take(ep *endpoint, cluster string) *upstream.Host {
	if r == nil || !ep.ip.IsValid() || int(ep.priority) >= len(r.levels) {
		return nil
	}
	p := ep.priority
	level, used := r.levels[p], r.used[p]
	for c := r.cursor[p]; c < len(level) && c <= r.cursor[p]+1; c++ {
		if !used[c] && sameHost(level[c], ep, cluster) {
			used[c] = true
			r.cursor[p] = c + 1
			return level[c]
		}
	}
	return nil
}

// takeMoved gives the endpoints take found no host for the host left over
// at their address, if one is identical.
func (r *hostReuse) takeMoved(eps []endpoint, cluster string) {
	if r == nil {
		return
	}
	var rest map[netip.AddrPort][]place
	for i := range eps {
		ep := &eps[i]
		if ep.host != nil || !ep.ip.IsValid() {
			continue
		}
		if rest == nil {
			rest = r.leftOver()
		}
		ap := netip.AddrPortFrom(ep.ip, ep.port)
		places := rest[ap]
		for j, pl := range places {
			if h := r.levels[pl.priority][pl.index]; sameHost(h, ep, cluster) {
				ep.host = h
				r.used[pl.priority][pl.index] = true
				rest[ap] = append(places[:j:j], places[j+1:]...)
				break
			}
		}
	}
}

// built records a host built anew for the update.
func (r *hostReuse) built(h *upstream.Host) {
	if r != nil {
		r.fresh = append(r.fresh, h)
	}
}

// place is a host's place in the current set: its level and its index
// there.
type place struct {
	priority uint32
	index    int
}

// leftOver indexes the places of the hosts not taken by address.
func (r *hostReuse) leftOver() map[netip.AddrPort][]place {
	rest := map[netip.AddrPort][]place{}
	for p, level := range r.levels {
		for c, h := range level {
			if r.used[p][c] {
				continue
			}
			if ap, err := netip.ParseAddrPort(h.Address); err == nil {
				rest[ap] = append(rest[ap], place{uint32(p), c})
			}
		}
	}
	return rest
}

// sameHost reports whether h is the host ep would build in cluster.
func sameHost(h *upstream.Host, ep *endpoint, cluster string) bool {
	if h.Priority != ep.priority || h.LocalityWeight != ep.localityWeight || h.Canary != ep.canary ||
		h.Locality != *ep.locality || h.Cluster != cluster ||
		h.Hostname != ep.lbe.GetEndpoint().GetHostname() ||
		h.Weight != orDefault(ep.lbe.GetLoadBalancingWeight(), MinWeight) ||
		h.ConfigHealth != ep.lbe.GetHealthStatus() || !sameHealthCheck(h.HealthCheck, ep.hc) ||
		!slices.Equal(h.AdditionalAddresses, ep.extra) {
		return false
	}
	if !hostAt(h.Address, ep) {
		return false
	}
	return sameMetadata(h.Metadata, ep.lbe.GetMetadata()) && sameMetadata(h.LocalityMetadata, ep.localityMetadata)
}

// sameMetadata reports whether two metadata are equal (both absent, or
// the same message, or equal ones).
func sameMetadata(a, b *corev3.Metadata) bool {
	return a == b || proto.Equal(a, b)
}

// sameHealthCheck reports whether two health_check_configs are the same
// (both absent, or equal).
func sameHealthCheck(a, b *upstream.HostHealthCheck) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// hostAt reports whether address (a host's, "ip:port" in netip's form) is
// ep's. The text is compared first: an IPv4 literal that parses is in
// netip's form already, so the address is the literal, a colon and the
// port; anything else (IPv6 in brackets) is parsed.
func hostAt(address string, ep *endpoint) bool {
	if n := len(ep.name); len(address) > n+1 && address[:n] == ep.name && address[n] == ':' {
		var buf [8]byte
		if address[n+1:] == string(strconv.AppendUint(buf[:0], uint64(ep.port), 10)) {
			return true
		}
	}
	ap, err := netip.ParseAddrPort(address)
	return err == nil && ap == netip.AddrPortFrom(ep.ip, ep.port)
}
