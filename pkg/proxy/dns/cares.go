package dns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	mdns "github.com/miekg/dns"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Envoy's c-ares defaults, which it sets whatever c-ares' own are.
const (
	// DefaultQueryTimeout is how long each attempt waits for an answer.
	DefaultQueryTimeout = 5 * time.Second
	// DefaultQueryTries is the number of attempts per nameserver.
	DefaultQueryTries = 4
	// defaultEDNSPayload is the UDP payload size advertised with EDNS0
	// (c-ares' default).
	defaultEDNSPayload = 1232
)

// CaresOptions configure a Cares resolver: the c-ares DNS resolver's
// options (CaresDnsResolverConfig), checked and converted.
type CaresOptions struct {
	// Resolvers replace the system's nameservers ("ip:port"), or, with
	// UseResolversAsFallback, are used only when the system names none.
	Resolvers              []string
	UseResolversAsFallback bool
	// UseTCP sends every query over TCP (use_tcp_for_dns_lookups).
	UseTCP bool
	// NoSearch skips the system's search domains
	// (no_default_search_domain).
	NoSearch bool
	// FilterUnroutableFamilies drops the address families no
	// non-loopback interface has.
	FilterUnroutableFamilies bool
	// QueryTimeout is each attempt's timeout (DefaultQueryTimeout when 0).
	QueryTimeout time.Duration
	// QueryTries is the number of attempts per nameserver
	// (DefaultQueryTries when 0).
	QueryTries int
	// Rotate starts each query at the next nameserver rather than the
	// first.
	Rotate bool
	// EDNSPayload is the EDNS0 UDP payload size (1232 when 0).
	EDNSPayload uint16
}

// Env is what a resolver takes from its surroundings. Tests point the
// system files elsewhere.
type Env struct {
	// Stats is the server's stat store (required for Cares).
	Stats *stats.Store
	// Log is the "dns" component logger.
	Log logr.Logger
	// ResolvConf and Hosts are the system files; "" means the defaults.
	ResolvConf string
	Hosts      string
	// Families reports whether any non-loopback interface has an IPv4
	// and an IPv6 address (filter_unroutable_families); nil asks the
	// system.
	Families func() (v4, v6 bool)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// caresStats are Envoy's dns.cares.* stats. Every c-ares resolver of a
// server shares them, as in Envoy, where each resolver creates the same
// names in the root scope.
type caresStats struct {
	resolveTotal   *stats.Counter
	pending        *stats.Gauge
	notFound       *stats.Counter
	getAddrFailure *stats.Counter
	timeouts       *stats.Counter
}

func newCaresStats(store *stats.Store) *caresStats {
	sc := store.Scope("dns.cares.")
	return &caresStats{
		resolveTotal:   sc.Counter("resolve_total"),
		pending:        sc.Gauge("pending_resolutions"),
		notFound:       sc.Counter("not_found"),
		getAddrFailure: sc.Counter("get_addr_failure"),
		timeouts:       sc.Counter("timeouts"),
	}
}

// Cares is a DNS resolver with the behaviour of Envoy's c-ares resolver
// (envoy.network.dns_resolver.cares): the hosts file first, then the
// nameservers over UDP (TCP when a response is truncated, or always with
// UseTCP), the search domains of resolv.conf, a bounded number of
// attempts per nameserver, each within the query timeout. Each attempt
// uses a socket of its own, so a resolution never waits behind another.
type Cares struct {
	servers  []string
	tcp      bool
	search   []string
	ndots    int
	hosts    *hostsFile
	timeout  time.Duration
	tries    int
	rotate   bool
	next     atomic.Uint32
	edns     uint16
	filter   bool
	families func() (v4, v6 bool)
	stats    *caresStats
	log      logr.Logger
}

// NewCares builds a c-ares style resolver. It reads resolv.conf now; the
// hosts file is read when names are looked up.
func NewCares(o CaresOptions, env Env) *Cares {
	if env.ResolvConf == "" {
		env.ResolvConf = DefaultResolvConf
	}
	if env.Hosts == "" {
		env.Hosts = DefaultHostsFile
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Families == nil {
		env.Families = interfaceFamilies
	}
	sys := loadSystem(env.ResolvConf)
	c := &Cares{
		servers:  sys.nameservers,
		tcp:      o.UseTCP,
		ndots:    sys.ndots,
		hosts:    &hostsFile{path: env.Hosts, now: env.Now},
		timeout:  o.QueryTimeout,
		tries:    o.QueryTries,
		rotate:   o.Rotate,
		edns:     o.EDNSPayload,
		filter:   o.FilterUnroutableFamilies,
		families: env.Families,
		stats:    newCaresStats(env.Stats),
		log:      env.Log,
	}
	if !o.NoSearch {
		c.search = sys.search
	}
	// As in Envoy: the configured resolvers replace the system's, unless
	// they are only a fallback and the system names its own.
	if len(o.Resolvers) > 0 && (!o.UseResolversAsFallback || sys.defaultOnly) {
		c.servers = append([]string(nil), o.Resolvers...)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultQueryTimeout
	}
	if c.tries <= 0 {
		c.tries = DefaultQueryTries
	}
	if c.edns == 0 {
		c.edns = defaultEDNSPayload
	}
	return c
}

// Servers returns the nameservers the resolver asks, in order.
func (c *Cares) Servers() []string { return append([]string(nil), c.servers...) }

// outcome classifies one lookup the way c-ares' status codes do.
type outcome uint8

const (
	outSuccess   outcome = iota // addresses found
	outNoData                   // the name exists without such addresses (ARES_ENODATA)
	outNotFound                 // NXDOMAIN (ARES_ENOTFOUND)
	outTimeout                  // every attempt timed out (ARES_ETIMEOUT)
	outRefused                  // connection refused (ARES_ECONNREFUSED)
	outServFail                 // SERVFAIL, REFUSED, NOTIMP... (ARES_ESERVFAIL...)
	outBadResp                  // a malformed response (ARES_EBADRESP)
	outBadName                  // a name that cannot be queried (ARES_EBADNAME)
	outBadFamily                // family filtered out (ARES_EBADFAMILY)
	outCancelled                // the caller gave up (shutdown)
)

func (o outcome) String() string {
	return [...]string{"success", "no data", "not found", "timeout", "connection refused",
		"server failure", "malformed response", "bad name", "family filtered", "cancelled"}[o]
}

// completed reports whether Envoy reads the outcome as a completed
// resolution (possibly without addresses) rather than a failure.
func (o outcome) completed() bool {
	return o == outSuccess || o == outNoData || o == outNotFound
}

// lookup is the result of one c-ares getaddrinfo call: one family, or
// both for ALL.
type lookup struct {
	out      outcome
	addrs    []Address
	timeouts int
	detail   string
}

// Resolve implements Resolver with the lookup families of Envoy's c-ares
// resolver: AUTO asks for IPv6 and then, without an answer, IPv4;
// V4_PREFERRED the other way round; ALL both at once. Each lookup counts
// once in dns.cares.resolve_total.
func (c *Cares) Resolve(ctx context.Context, name string, family Family) Result {
	var first, second uint16
	switch family {
	case V4Only, V4Preferred:
		first = mdns.TypeA
	case V6Only, Auto:
		first = mdns.TypeAAAA
	}
	if family == Auto {
		second = mdns.TypeA
	} else if family == V4Preferred {
		second = mdns.TypeAAAA
	}
	if family == All {
		l := c.counted(ctx, name, mdns.TypeA, mdns.TypeAAAA)
		return l.result()
	}
	l := c.counted(ctx, name, first)
	if len(l.addrs) > 0 || second == 0 || l.out == outCancelled {
		return l.result()
	}
	l2 := c.counted(ctx, name, second)
	// Envoy's c-ares resolver reports success when either lookup
	// answered, even without addresses.
	if !l2.out.completed() && l.out.completed() {
		l2.out, l2.detail = l.out, l.detail
	}
	return l2.result()
}

// result converts a lookup to a Result.
func (l lookup) result() Result {
	r := Result{Status: Failed, Addresses: l.addrs, Details: l.out.String()}
	if l.detail != "" {
		r.Details += ": " + l.detail
	}
	if l.out.completed() {
		r.Status = Completed
	}
	return r
}

// counted runs one lookup and counts it in the dns.cares.* stats.
func (c *Cares) counted(ctx context.Context, name string, qtypes ...uint16) lookup {
	c.stats.pending.Inc()
	l := c.lookup(ctx, name, qtypes)
	c.stats.pending.Dec()
	c.stats.resolveTotal.Inc()
	switch l.out {
	case outSuccess, outCancelled:
	case outNoData, outNotFound:
		c.stats.notFound.Inc()
	case outTimeout:
		c.stats.timeouts.Add(uint64(l.timeouts))
	default:
		c.stats.getAddrFailure.Inc()
	}
	if l.out != outSuccess && l.out != outCancelled {
		c.log.V(1).Info("dns resolution failed or found nothing", "name", name, "status", l.out.String(), "detail", l.detail)
	}
	return l
}

// lookup resolves name for the given query types: an IP literal, the
// hosts file and localhost, then the DNS through the search list.
func (c *Cares) lookup(ctx context.Context, name string, qtypes []uint16) lookup {
	if name == "" {
		return lookup{out: outBadName, detail: "empty name"}
	}
	wantV4, wantV6 := slicesHas(qtypes, mdns.TypeA), slicesHas(qtypes, mdns.TypeAAAA)
	if c.filter {
		v4, v6 := c.families()
		wantV4, wantV6 = wantV4 && v4, wantV6 && v6
		if !wantV4 && !wantV6 {
			return lookup{out: outBadFamily, detail: "no interface of the family"}
		}
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		if (ip.Is4() && wantV4) || (ip.Is6() && wantV6) {
			return lookup{out: outSuccess, addrs: []Address{{IP: ip}}}
		}
		return lookup{out: outNoData, detail: "an IP literal of the other family"}
	}
	if found := filterFamilies(c.hosts.lookup(name), wantV4, wantV6); len(found) > 0 {
		return lookup{out: outSuccess, addrs: found}
	}
	if isLocalhost(name) {
		var addrs []Address
		if wantV4 {
			addrs = append(addrs, Address{IP: netip.AddrFrom4([4]byte{127, 0, 0, 1})})
		}
		if wantV6 {
			addrs = append(addrs, Address{IP: netip.IPv6Loopback()})
		}
		return lookup{out: outSuccess, addrs: addrs}
	}
	var types []uint16
	if wantV4 {
		types = append(types, mdns.TypeA)
	}
	if wantV6 {
		types = append(types, mdns.TypeAAAA)
	}
	candidates, err := c.candidates(name)
	if err != nil {
		return lookup{out: outBadName, detail: err.Error()}
	}
	sawNoData := false
	var last lookup
	for _, fqdn := range candidates {
		l := c.queryTypes(ctx, fqdn, types)
		switch l.out {
		case outNoData:
			sawNoData = true
			last = l
			continue
		case outNotFound:
			last = l
			continue
		}
		return l
	}
	if sawNoData {
		last.out = outNoData
	}
	return last
}

// filterFamilies keeps the addresses of the wanted families.
func filterFamilies(ips []netip.Addr, v4, v6 bool) []Address {
	var out []Address
	for _, ip := range ips {
		if (ip.Is4() && v4) || (ip.Is6() && v6) {
			out = append(out, Address{IP: ip})
		}
	}
	return out
}

func slicesHas(list []uint16, v uint16) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// candidates lists the names to query, in order: a name ending in a dot
// as it is; otherwise, with the search domains, the name as it is first
// when it has at least ndots dots, else last.
func (c *Cares) candidates(name string) ([]string, error) {
	if _, ok := mdns.IsDomainName(name); !ok {
		return nil, fmt.Errorf("%q is not a domain name", name)
	}
	if mdns.IsFqdn(name) {
		return []string{name}, nil
	}
	asIs := name + "."
	if len(c.search) == 0 {
		return []string{asIs}, nil
	}
	list := make([]string, 0, len(c.search)+1)
	dots := strings.Count(name, ".")
	if dots >= c.ndots {
		list = append(list, asIs)
	}
	for _, d := range c.search {
		list = append(list, name+"."+d+".")
	}
	if dots < c.ndots {
		list = append(list, asIs)
	}
	return list, nil
}

// queryTypes asks for every type at once (ALL asks for A and AAAA
// together) and merges the answers: A records first.
func (c *Cares) queryTypes(ctx context.Context, fqdn string, types []uint16) lookup {
	if len(types) == 1 {
		return c.query(ctx, fqdn, types[0])
	}
	results := make([]lookup, len(types))
	var wg sync.WaitGroup
	for i, t := range types {
		wg.Go(func() { results[i] = c.query(ctx, fqdn, t) })
	}
	wg.Wait()
	merged := lookup{out: outNoData}
	for _, r := range results {
		merged.addrs = append(merged.addrs, r.addrs...)
		merged.timeouts += r.timeouts
	}
	if len(merged.addrs) > 0 {
		merged.out = outSuccess
		return merged
	}
	// No address: the name does not exist if any answer says so; a
	// failure wins over an empty answer.
	for _, r := range results {
		if r.out == outNotFound {
			merged.out, merged.detail = outNotFound, r.detail
			return merged
		}
	}
	for _, r := range results {
		if !r.out.completed() {
			merged.out, merged.detail = r.out, r.detail
			return merged
		}
	}
	return merged
}

// query asks the nameservers for one type of record of fqdn: up to tries
// attempts per nameserver, each waiting at most the query timeout. A
// SERVFAIL, REFUSED or malformed answer moves on to the next attempt, as
// c-ares does; NOERROR and NXDOMAIN end the query.
func (c *Cares) query(ctx context.Context, fqdn string, qtype uint16) lookup {
	msg := new(mdns.Msg)
	msg.SetQuestion(fqdn, qtype)
	msg.RecursionDesired = true
	msg.SetEdns0(c.edns, false)
	n := len(c.servers)
	start := 0
	if c.rotate {
		start = int(c.next.Add(1)-1) % n
	}
	last := lookup{out: outTimeout}
	timeouts := 0
	for attempt := range c.tries * n {
		if ctx.Err() != nil {
			return lookup{out: outCancelled, detail: ctx.Err().Error()}
		}
		server := c.servers[(start+attempt)%n]
		msg.Id = mdns.Id()
		resp, err := c.exchange(ctx, server, msg)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return lookup{out: outCancelled, detail: ctx.Err().Error()}
			case isTimeout(err):
				timeouts++
				last = lookup{out: outTimeout, detail: server}
			case isRefused(err):
				last = lookup{out: outRefused, detail: server}
			case err == errBadResponse:
				last = lookup{out: outBadResp, detail: server}
			default:
				last = lookup{out: outRefused, detail: err.Error()}
			}
			continue
		}
		switch resp.Rcode {
		case mdns.RcodeSuccess:
			addrs := answers(resp, fqdn, qtype)
			if len(addrs) == 0 {
				return lookup{out: outNoData, detail: fqdn}
			}
			return lookup{out: outSuccess, addrs: addrs}
		case mdns.RcodeNameError:
			return lookup{out: outNotFound, detail: fqdn}
		default:
			last = lookup{out: outServFail, detail: fmt.Sprintf("%s answered %s", server, rcodeName(resp.Rcode))}
		}
	}
	last.timeouts = timeouts
	return last
}

func rcodeName(rc int) string {
	if s, ok := mdns.RcodeToString[rc]; ok {
		return s
	}
	return fmt.Sprint(rc)
}

// answers collects the addresses of type qtype for fqdn, following the
// CNAME chain of the answer section. Each address's TTL is the smallest of
// its record's and the CNAMEs' leading to it.
func answers(resp *mdns.Msg, fqdn string, qtype uint16) []Address {
	chain := map[string]uint32{normalizeName(fqdn): ^uint32(0)}
	for changed := true; changed; {
		changed = false
		for _, rr := range resp.Answer {
			cn, ok := rr.(*mdns.CNAME)
			if !ok {
				continue
			}
			ttl, in := chain[normalizeName(cn.Hdr.Name)]
			target := normalizeName(cn.Target)
			if _, seen := chain[target]; in && !seen {
				chain[target] = min(ttl, cn.Hdr.Ttl)
				changed = true
			}
		}
	}
	var out []Address
	for _, rr := range resp.Answer {
		var ip netip.Addr
		switch r := rr.(type) {
		case *mdns.A:
			if qtype != mdns.TypeA {
				continue
			}
			ip, _ = netip.AddrFromSlice(r.A.To4())
		case *mdns.AAAA:
			if qtype != mdns.TypeAAAA {
				continue
			}
			// A v4-mapped address in an AAAA record stays IPv6.
			ip, _ = netip.AddrFromSlice(r.AAAA.To16())
		default:
			continue
		}
		cnameTTL, in := chain[normalizeName(rr.Header().Name)]
		if !in || !ip.IsValid() {
			continue
		}
		ttl := time.Duration(min(cnameTTL, rr.Header().Ttl)) * time.Second
		if dup := indexAddr(out, ip); dup >= 0 {
			out[dup].TTL = min(out[dup].TTL, ttl)
			continue
		}
		out = append(out, Address{IP: ip, TTL: ttl})
	}
	return out
}

func indexAddr(list []Address, ip netip.Addr) int {
	for i, a := range list {
		if a.IP == ip {
			return i
		}
	}
	return -1
}

// interfaceFamilies reports whether any non-loopback interface address is
// IPv4, and whether any is IPv6. Both are true when the system cannot say,
// as in Envoy.
func interfaceFamilies() (v4, v6 bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true, true
	}
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil || pfx.Addr().IsLoopback() {
			continue
		}
		if pfx.Addr().Unmap().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	return v4, v6
}
