package dnsfilter

import (
	"net/netip"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// fromClusters answers from a cluster's hosts, as Envoy's
// resolveViaClusters: SRV from the service's first target when it is a
// cluster, A and AAAA from the cluster the name redirects to, or the
// cluster of that very name.
func (f *Filter) fromClusters(q *queryContext, qu question) bool {
	switch qu.qtype {
	case typeSRV:
		return f.clusterService(q, qu)
	case typeA, typeAAAA:
		return f.clusterHost(q, qu)
	}
	return false
}

// clusterHosts is every host of the named cluster, nil when there is no
// such cluster.
func (f *Filter) clusterHosts(name string) []*upstream.Host {
	if f.clusters == nil || name == "" {
		return nil
	}
	cl := f.clusters.Cluster(name)
	if cl == nil {
		return nil
	}
	hl, ok := cl.(hostLister)
	if !ok {
		return nil
	}
	return hl.Hosts()
}

// hostAddr is the IP address and port of a host, false for a pipe or a
// host name.
func hostAddr(h *upstream.Host) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(h.Address)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// clusterHost answers an A or AAAA question with the addresses of the
// cluster's hosts of the family asked for. The TTL is the cluster name's
// (the default unless a virtual domain has the cluster's name), as in
// Envoy.
func (f *Filter) clusterHost(q *queryContext, qu question) bool {
	name := f.cfg.table.clusterOf(qu.name)
	if name == "" {
		name = qu.name
	}
	hosts := f.clusterHosts(name)
	ttl := f.cfg.table.ttl(name)
	n := 0
	for _, h := range hosts {
		ap, ok := hostAddr(h)
		if !ok {
			continue
		}
		if q.addAnswer(qu, ttl, ap.Addr()) {
			f.stats.clusterAnswer(qu.qtype)
			n++
		}
	}
	return n != 0
}

// clusterService answers an SRV question whose service's first target is
// a cluster: an SRV record per host (the target's port, or the host's
// when it is 0), each with the host's address as an additional record
// named after the cluster.
func (f *Filter) clusterService(q *queryContext, qu question) bool {
	svc := f.cfg.table.serviceOf(qu.name)
	if svc == nil || len(svc.targets) == 0 || !svc.targets[0].cluster {
		return false
	}
	t := svc.targets[0]
	hosts := f.clusterHosts(t.name)
	ttl := f.cfg.table.ttl(t.name)
	n := 0
	for _, h := range hosts {
		ap, ok := hostAddr(h)
		if !ok {
			continue
		}
		ht := t
		if ht.port == 0 {
			ht.port = ap.Port()
		}
		q.addService(qu, svc, ht)
		f.stats.clusterAnswer(typeSRV)
		rt := addressType(ap.Addr())
		if q.addAdditional(t.name, rt, ttl, ap.Addr()) {
			n++
			f.stats.clusterAnswer(rt)
		}
	}
	return n != 0
}

// fromTable answers from the table's address lists and services, as
// Envoy's resolveViaConfiguredHosts.
func (f *Filter) fromTable(q *queryContext, qu question) bool {
	switch qu.qtype {
	case typeA, typeAAAA:
		return f.configuredDomain(q, qu)
	case typeSRV:
		return f.configuredService(q, qu)
	}
	return false
}

// configuredDomain answers with the name's address list, those of the
// family asked for. A list without such an address still counts as
// found (the answer is then NXDOMAIN, not forwarded), as in Envoy.
func (f *Filter) configuredDomain(q *queryContext, qu question) bool {
	addrs, _ := f.cfg.table.addresses(qu.name)
	ttl := f.cfg.table.ttl(qu.name)
	for _, a := range addrs {
		if q.addAnswer(qu, ttl, a) {
			f.stats.localAnswer(qu.qtype)
		}
	}
	return len(addrs) != 0
}

// configuredService answers with an SRV record per target whose name has
// an address list in the table, and the target's addresses as additional
// records.
func (f *Filter) configuredService(q *queryContext, qu question) bool {
	svc := f.cfg.table.serviceOf(qu.name)
	if svc == nil {
		return false
	}
	n := 0
	for _, t := range svc.targets {
		addrs, ok := f.cfg.table.addresses(t.name)
		if !ok {
			continue
		}
		f.stats.localAnswer(typeSRV)
		q.addService(qu, svc, t)
		ttl := f.cfg.table.ttl(t.name)
		for _, a := range addrs {
			rt := addressType(a)
			f.stats.localAnswer(rt)
			q.addAdditional(t.name, rt, ttl, a)
			n++
		}
	}
	return n != 0
}
