package dnsfilter

import (
	"context"
	"net/netip"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// resolveExternal asks the upstream resolvers for qu, as Envoy's
// DnsFilterResolver: A as IPv4 only, AAAA as IPv6 only, any other type
// answered at once without addresses; beyond max_pending_lookups pending
// lookups, answered at once without addresses too. A lookup that does not
// end within resolver_timeout is tried again while external_retry_count
// allows, else answered without addresses; a lookup the resolver fails is
// not retried (Envoy retries timeouts only).
func (f *Filter) resolveExternal(sock udpfilter.Socket, peer netip.AddrPort, q *queryContext, qu question, start time.Time) {
	var family dns.Family
	switch qu.qtype {
	case typeA:
		family = dns.V4Only
	case typeAAAA:
		family = dns.V6Only
	default:
		f.resolved(sock, peer, q, qu, nil, start)
		return
	}
	f.mu.Lock()
	if f.pending > f.cfg.maxPending || f.ctx.Err() != nil {
		f.mu.Unlock()
		f.resolved(sock, peer, q, qu, nil, start)
		return
	}
	f.pending++
	f.lookups.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.lookups.Done()
		addrs, ok := f.lookup(qu.name, family, q)
		f.mu.Lock()
		f.pending--
		f.mu.Unlock()
		if ok {
			f.resolved(sock, peer, q, qu, addrs, start)
		}
	}()
}

// lookup resolves name, trying again after each timeout while retries
// are left. ok is false when the filter closed meanwhile: the query goes
// unanswered.
func (f *Filter) lookup(name string, family dns.Family, q *queryContext) ([]netip.Addr, bool) {
	for {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.resolverTimeout)
		res := f.resolver.Resolve(ctx, name, family)
		timedOut := ctx.Err() != nil
		cancel()
		if f.ctx.Err() != nil {
			return nil, false
		}
		if timedOut {
			if q.retries > 0 {
				q.retries--
				continue
			}
			return nil, true
		}
		if res.Status != dns.Completed {
			return nil, true
		}
		addrs := make([]netip.Addr, 0, len(res.Addresses))
		for _, a := range res.Addresses {
			addrs = append(addrs, a.IP)
		}
		return addrs, true
	}
}

// resolved answers q with what the upstream resolvers returned.
func (f *Filter) resolved(sock udpfilter.Socket, peer netip.AddrPort, q *queryContext, qu question, addrs []netip.Addr, start time.Time) {
	f.stats.externallyResolved.Inc()
	if len(addrs) == 0 {
		f.stats.unanswered.Inc()
	}
	f.stats.externalQuery(qu.qtype)
	ttl := f.cfg.table.ttl(qu.name)
	for _, a := range addrs {
		f.stats.externalAnswer(qu.qtype)
		q.addAnswer(qu, ttl, a.Unmap())
	}
	f.send(sock, peer, q, start)
}
