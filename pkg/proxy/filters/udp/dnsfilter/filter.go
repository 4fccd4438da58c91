package dnsfilter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// hostLister is what the filter needs of a cluster to answer with its
// hosts: every host, of every priority.
type hostLister interface {
	Hosts() []*upstream.Host
}

// Filter is a compiled DnsFilterConfig: the DNS filter of one UDP
// listener. Queries are answered on the listener socket's read goroutine;
// forwarded ones on a goroutine of their own each, at most
// max_pending_lookups (plus one, as Envoy counts) at a time.
type Filter struct {
	cfg      *config
	stats    *filterStats
	clusters udpfilter.Clusters
	resolver dns.Resolver
	log      logr.Logger
	now      func() time.Time

	// ctx ends with the filter: pending lookups stop, unanswered.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	pending uint64
	lookups sync.WaitGroup
}

var _ udpfilter.Filter = (*Filter)(nil)

// newFilter builds the filter of a compiled configuration.
func newFilter(c *config, ctx udpfilter.Context) *Filter {
	now := ctx.Now
	if now == nil {
		now = time.Now
	}
	f := &Filter{
		cfg:      c,
		stats:    newFilterStats(ctx.Stats, c.statPrefix),
		clusters: ctx.Clusters,
		log:      ctx.Log,
		now:      now,
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if c.forward {
		f.resolver = c.resolver.New(dns.Env{Stats: ctx.Stats, Log: ctx.Log})
	}
	return f
}

// OnDatagram answers one query. It implements udpfilter.Filter.
func (f *Filter) OnDatagram(d udpfilter.Datagram) {
	defer func() {
		// A bug must cost one query, not the listener.
		if r := recover(); r != nil {
			f.log.Error(fmt.Errorf("panic: %v", r), "dns filter panicked", "stack", string(debug.Stack()))
		}
	}()
	start := f.now()
	f.stats.rxBytes.Record(uint64(len(d.Data)))
	f.stats.rxQueries.Inc()
	q := parseQuery(d.Data, f.stats)
	q.retries = f.cfg.table.retries
	for _, qu := range q.questions {
		f.stats.queryType(qu.qtype)
	}
	if !q.parsed {
		f.stats.rxInvalid.Inc()
		f.send(d.Socket, d.Peer, q, start)
		return
	}
	if f.answer(d.Socket, d.Peer, q, start) {
		return
	}
	f.send(d.Socket, d.Peer, q, start)
}

// answer finds the answers to q's question, as Envoy's
// getResponseForQuery: a name of a known suffix (or any name without
// client_config) from the clusters, then the table; else from the
// upstream resolvers, and then the response leaves when they answer:
// answer reports true.
func (f *Filter) answer(sock udpfilter.Socket, peer netip.AddrPort, q *queryContext, start time.Time) bool {
	for _, qu := range q.questions {
		if f.known(qu.name) || !f.cfg.forward {
			if f.fromClusters(q, qu) || f.fromTable(q, qu) {
				continue
			}
		}
		if f.cfg.forward {
			f.resolveExternal(sock, peer, q, qu, start)
			return true
		}
	}
	if len(q.answers) == 0 {
		f.stats.unanswered.Inc()
	}
	return false
}

// known reports whether the table knows name's suffix, counting it.
func (f *Filter) known(name string) bool {
	if f.cfg.table.known(name) {
		f.stats.knownDomain.Inc()
		return true
	}
	return false
}

// send writes the response to q back to peer.
func (f *Filter) send(sock udpfilter.Socket, peer netip.AddrPort, q *queryContext, start time.Time) {
	b := buildResponse(q, f.cfg.forward, rand.IntN)
	f.stats.txResponses.Inc()
	f.stats.txBytes.Record(uint64(len(b)))
	if q.parsed {
		f.stats.latency.Record(uint64(f.now().Sub(start).Milliseconds()))
	}
	if err := sock.WriteTo(b, peer); err != nil {
		f.log.V(1).Info("dns_filter: cannot send a response", "peer", peer.String(), "error", err.Error())
	}
}

// OnReceiveError counts a failed read of the listener's socket
// (downstream_rx_errors). It implements udpfilter.Filter.
func (f *Filter) OnReceiveError() { f.stats.rxErrors.Inc() }

// Close stops the pending lookups: their queries go unanswered, as
// Envoy's end with their filter. It implements udpfilter.Filter.
func (f *Filter) Close() error {
	f.cancel()
	return nil
}

// Shutdown closes the filter and waits, until ctx ends at the latest, for
// its lookups to be gone. It implements udpfilter.Filter.
func (f *Filter) Shutdown(ctx context.Context) error {
	return udpfilter.CloseAndWait(ctx, f, &f.lookups)
}
