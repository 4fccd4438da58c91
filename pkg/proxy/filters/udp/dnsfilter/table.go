package dnsfilter

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"

	dnstablev3 "github.com/envoyproxy/go-control-plane/envoy/data/dns/v3"
)

// defaultTTL is the TTL of answers for names without answer_ttl (Envoy's
// DEFAULT_RESOLVER_TTL), in seconds.
const defaultTTL = 300

// suffixLabels is how many trailing labels make a name's suffix, the key
// under which Envoy files virtual domains (MAX_SUFFIX_LABEL_COUNT).
const suffixLabels = 2

// endpoint is what a virtual domain (or a service name) answers with: an
// address list, a cluster's hosts or a service's targets.
type endpoint struct {
	// addrs is address_list; hasAddrs tells an empty list from none.
	addrs    []netip.Addr
	hasAddrs bool
	// cluster is cluster_name, "" for none.
	cluster string
	// service is the SRV service filed under this name, nil for none.
	service *service
}

// service is one service of a service_list, filed under its full name
// (_name._proto.domain).
type service struct {
	name string
	// ttl is the SRV records' TTL (the service's own ttl), in seconds.
	ttl     uint32
	targets []target
}

// target is one target of a service: a host name whose addresses the
// table holds, or a cluster whose hosts are the targets.
type target struct {
	name                   string
	priority, weight, port uint16
	cluster                bool
}

// table is a compiled DnsTable, organised as Envoy's filter organises it:
// virtual domains filed by the suffix of their name (its last two labels),
// the suffixes telling which queries the table may answer.
type table struct {
	suffixes map[string]map[string]*endpoint
	// ttls are the answer TTLs by virtual domain name (wildcards without
	// their "*"), in seconds.
	ttls map[string]uint32
	// retries is external_retry_count.
	retries uint32
	// fold matches names case-insensitively (case_insensitive): keys are
	// kept lower-case and so are looked-up names.
	fold bool
	// notes are what Envoy drops without a word, for the log.
	notes []string
}

// compileTable reads a DnsTable the way Envoy's DnsFilterEnvoyConfig
// does. A malformed address is an error (Envoy throws); a service with a
// protocol number other than 6 or 17, or whose domain's suffix no earlier
// virtual domain filed, is dropped, as Envoy drops it, with a note. Paths
// are relative to the table.
func compileTable(t *dnstablev3.DnsTable, fold bool, rng *rand.Rand) (*table, []error) {
	tb := &table{
		suffixes: map[string]map[string]*endpoint{},
		ttls:     map[string]uint32{},
		retries:  t.GetExternalRetryCount(),
		fold:     fold,
	}
	var errs []error
	for i, vd := range t.GetVirtualDomains() {
		path := fmt.Sprintf("virtual_domains[%d]", i)
		name := tb.key(vd.GetName())
		vname := virtualName(name)
		suffix := domainSuffix(vname)
		ep := vd.GetEndpoint()
		if al := ep.GetAddressList(); al != nil {
			addrs := make([]netip.Addr, 0, len(al.GetAddress()))
			bad := false
			for j, s := range al.GetAddress() {
				a, err := netip.ParseAddr(s)
				if err != nil || a.Zone() != "" {
					errs = append(errs, fmt.Errorf("%s.endpoint.address_list.address[%d]: malformed IP address: %s", path, j, s))
					bad = true
					continue
				}
				addrs = append(addrs, a.Unmap())
			}
			if !bad {
				tb.addAddresses(suffix, vname, rotate(addrs, rng))
			}
		}
		if sl := ep.GetServiceList(); sl != nil {
			for j, s := range sl.GetServices() {
				tb.addService(suffix, vd.GetName(), fmt.Sprintf("%s.endpoint.service_list.services[%d]", path, j), s)
			}
		}
		if c := ep.GetClusterName(); c != "" {
			domains := tb.suffixes[suffix]
			if domains == nil {
				domains = map[string]*endpoint{}
				tb.suffixes[suffix] = domains
			}
			// A name is redirected to one cluster: the first entry wins.
			if _, ok := domains[vname]; !ok {
				domains[vname] = &endpoint{cluster: c}
			}
		}
		ttl := uint32(defaultTTL)
		if d := vd.GetAnswerTtl(); d != nil {
			ttl = uint32(d.GetSeconds())
		}
		if _, ok := tb.ttls[vname]; !ok {
			tb.ttls[vname] = ttl
		}
	}
	return tb, errs
}

// rotate returns addrs starting at a random index, as Envoy stores them so
// that answers do not always come in the configured order.
func rotate(addrs []netip.Addr, rng *rand.Rand) []netip.Addr {
	if len(addrs) < 2 {
		return addrs
	}
	i := rng.IntN(len(addrs))
	return append(addrs[i:len(addrs):len(addrs)], addrs[:i]...)
}

// addAddresses files an address list under its name; a name listed twice
// gets the addresses of both entries.
func (tb *table) addAddresses(suffix, vname string, addrs []netip.Addr) {
	domains := tb.suffixes[suffix]
	if domains == nil {
		domains = map[string]*endpoint{}
		tb.suffixes[suffix] = domains
	}
	if ep, ok := domains[vname]; ok {
		ep.addrs = append(ep.addrs, addrs...)
		ep.hasAddrs = true
		return
	}
	domains[vname] = &endpoint{addrs: addrs, hasAddrs: true}
}

// addService files one service under its full name, in the suffix of its
// domain.
func (tb *table) addService(suffix, domain, path string, s *dnstablev3.DnsTable_DnsService) {
	proto := protoName(s.GetProtocol())
	if proto == "" {
		tb.notes = append(tb.notes, path+".protocol: a protocol number other than 6 (tcp) or 17 (udp) has no name; Envoy drops the service")
		return
	}
	full := tb.key(serviceName(s.GetServiceName(), proto, domain))
	svc := &service{name: full, ttl: uint32(s.GetTtl().GetSeconds())}
	seen := map[string]bool{}
	for _, t := range s.GetTargets() {
		tg := target{
			name:     t.GetHostName(),
			priority: uint16(t.GetPriority()),
			weight:   uint16(t.GetWeight()),
			port:     uint16(t.GetPort()),
		}
		if tg.name == "" {
			tg.name, tg.cluster = t.GetClusterName(), true
		}
		// Envoy keeps a service's targets in a map by name: the first of a
		// name stays.
		if seen[tg.name] {
			continue
		}
		seen[tg.name] = true
		svc.targets = append(svc.targets, tg)
	}
	domains := tb.suffixes[suffix]
	if domains == nil {
		tb.notes = append(tb.notes, path+": no earlier virtual domain shares the suffix "+suffix+" of this service's domain; Envoy drops the service")
		return
	}
	if _, ok := domains[full]; !ok {
		domains[full] = &endpoint{service: svc}
	}
}

// key is a name as the table files it: lower-case when matching ignores
// case.
func (tb *table) key(name string) string {
	if tb.fold {
		return strings.ToLower(name)
	}
	return name
}

// known reports whether the table has virtual domains with the suffix of
// name: with client_config, only such names are looked up in the table
// (and the clusters) before they are forwarded.
func (tb *table) known(name string) bool {
	_, ok := tb.suffixes[domainSuffix(tb.key(name))]
	return ok
}

// lookup finds the endpoint of name: the exact name first, then the
// longest wildcard ("*.example.com", filed as ".example.com") covering it.
func (tb *table) lookup(name string) *endpoint {
	name = tb.key(name)
	domains := tb.suffixes[domainSuffix(name)]
	if domains == nil {
		return nil
	}
	for pos := 0; pos >= 0; {
		if ep, ok := domains[name[pos:]]; ok {
			return ep
		}
		next := strings.IndexByte(name[pos+1:], '.')
		if next < 0 {
			break
		}
		pos += 1 + next
	}
	return nil
}

// addresses is the address list of name, nil (and false) for none.
func (tb *table) addresses(name string) ([]netip.Addr, bool) {
	if ep := tb.lookup(name); ep != nil && ep.hasAddrs {
		return ep.addrs, true
	}
	return nil, false
}

// clusterOf is the cluster name redirects to, "" for none.
func (tb *table) clusterOf(name string) string {
	if ep := tb.lookup(name); ep != nil {
		return ep.cluster
	}
	return ""
}

// serviceOf is the service filed under name, nil for none.
func (tb *table) serviceOf(name string) *service {
	if ep := tb.lookup(name); ep != nil {
		return ep.service
	}
	return nil
}

// ttl is the answer TTL of a name: its virtual domain's answer_ttl when
// the name is exactly one, else the default (a wildcard's own answer_ttl
// does not reach the names it covers, as in Envoy).
func (tb *table) ttl(name string) uint32 {
	if v, ok := tb.ttls[tb.key(name)]; ok {
		return v
	}
	return defaultTTL
}

// virtualName is the name a virtual domain is filed under: a wildcard
// "*.example.com" as ".example.com", which the lookup tries for every
// name below example.com.
func virtualName(name string) string {
	if strings.HasPrefix(name, "*.") {
		return name[1:]
	}
	return name
}

// domainSuffix is the last two labels of name (all of it when it has
// fewer), as Envoy's Utils::getDomainSuffix.
func domainSuffix(name string) string {
	pos := len(name)
	for range suffixLabels {
		i := strings.LastIndexByte(name[:pos], '.')
		if i < 0 {
			return name
		}
		pos = i
	}
	return name[pos+1:]
}

// protoName is a service's protocol name: its name, or tcp and udp for
// the numbers 6 and 17; "" for another number.
func protoName(p *dnstablev3.DnsTable_DnsServiceProtocol) string {
	if n := p.GetName(); n != "" {
		return n
	}
	switch p.GetNumber() {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	}
	return ""
}

// serviceName is the full name of a service, its name and protocol
// labels prefixed with "_" unless they already are.
func serviceName(name, proto, domain string) string {
	var b strings.Builder
	if !strings.HasPrefix(name, "_") {
		b.WriteByte('_')
	}
	b.WriteString(name)
	b.WriteByte('.')
	if !strings.HasPrefix(proto, "_") {
		b.WriteByte('_')
	}
	b.WriteString(proto)
	b.WriteByte('.')
	b.WriteString(domain)
	return b.String()
}
