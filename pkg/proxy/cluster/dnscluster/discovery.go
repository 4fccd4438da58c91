package dnscluster

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Stats are the cluster's config update counters that resolutions move
// (cluster.<name>.update_*), as Envoy's DNS clusters count them.
type Stats struct {
	// UpdateAttempt counts resolutions started.
	UpdateAttempt *stats.Counter
	// UpdateSuccess counts resolutions that answered (for LOGICAL_DNS,
	// with at least one address).
	UpdateSuccess *stats.Counter
	// UpdateFailure counts the others; the hosts stay as they were.
	UpdateFailure *stats.Counter
	// UpdateNoRebuild counts successes that changed no host.
	UpdateNoRebuild *stats.Counter
}

// Publish receives the cluster's hosts, per priority level (index 0
// first), each time they change. Calls never overlap.
type Publish func(priorities [][]*upstream.Host)

// Discovery keeps a DNS cluster's hosts following the answers of its
// resolver: each target is resolved on a goroutine of its own, again after
// the refresh rate (or the TTL, or the failure back-off), and every change
// is published. Nothing here runs on a worker: requests only see the
// published hosts.
type Discovery struct {
	cluster  string
	cfg      Config
	resolver dns.Resolver
	stats    Stats
	publish  Publish
	log      logr.Logger
	rand     func() uint64

	mu      sync.Mutex
	targets []targetState

	warmOnce sync.Once
	warm     chan struct{}

	startOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// targetState is what a target's goroutine keeps between resolutions.
type targetState struct {
	hosts []*upstream.Host
	// addrs are the LOGICAL_DNS answer the host was built from.
	addrs []netip.Addr
	// failing and empty remember that the last resolution failed or found
	// no address, so that each is logged once until it changes.
	failing, empty bool
}

// New prepares a cluster's discovery; Start begins resolving. rand draws
// the jitter and the back-off.
func New(cluster string, cfg Config, r dns.Resolver, st Stats, publish Publish, log logr.Logger, rand func() uint64) *Discovery {
	ctx, cancel := context.WithCancel(context.Background())
	d := &Discovery{
		cluster:  cluster,
		cfg:      cfg,
		resolver: r,
		stats:    st,
		publish:  publish,
		log:      log,
		rand:     rand,
		targets:  make([]targetState, len(cfg.Targets)),
		warm:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
	}
	if len(cfg.Targets) == 0 || !cfg.WaitForWarm {
		// As in Envoy: without endpoints, or when told not to wait, the
		// cluster is initialised at once.
		d.markWarm()
	}
	return d
}

// Start begins resolving every target. Calling it again does nothing.
func (d *Discovery) Start() {
	d.startOnce.Do(func() {
		for i := range d.cfg.Targets {
			d.wg.Go(func() { d.run(i) })
		}
	})
}

// Warmed is closed once the cluster is initialised: the first resolution
// of any target has ended, successful or not (or at once, see New).
func (d *Discovery) Warmed() <-chan struct{} { return d.warm }

// Stop ends every resolution and waits for the goroutines to return. It
// also releases whoever waits for Warmed: the server is shutting down.
func (d *Discovery) Stop() {
	d.cancel()
	d.startOnce.Do(func() {}) // a discovery never started never starts
	d.wg.Wait()
	d.markWarm()
}

func (d *Discovery) markWarm() { d.warmOnce.Do(func() { close(d.warm) }) }

// run resolves target i until Stop.
func (d *Discovery) run(i int) {
	b := dns.NewBackoffState(d.cfg.Failure, d.cfg.RefreshRate, d.rand)
	t := &d.cfg.Targets[i]
	for {
		d.stats.UpdateAttempt.Inc()
		res := d.resolver.Resolve(d.ctx, t.Name, d.cfg.Family)
		if d.ctx.Err() != nil {
			return
		}
		next := d.apply(i, res, b)
		d.markWarm()
		timer := time.NewTimer(next)
		select {
		case <-d.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// apply takes one resolution of target i into account and returns when to
// resolve it again.
func (d *Discovery) apply(i int, res dns.Result, b *dns.BackoffState) time.Duration {
	t := &d.cfg.Targets[i]
	ok := res.Status == dns.Completed && (!d.cfg.Logical || len(res.Addresses) > 0)
	d.mu.Lock()
	defer d.mu.Unlock()
	st := &d.targets[i]
	if !ok {
		d.stats.UpdateFailure.Inc()
		if !st.failing {
			logging.Warning(d.log, "DNS resolution failed; the cluster keeps its hosts and retries",
				"cluster", d.cluster, "name", t.Name, "details", res.Details)
		} else {
			d.log.V(1).Info("DNS resolution failed again", "cluster", d.cluster, "name", t.Name, "details", res.Details)
		}
		st.failing = true
		return b.Next()
	}
	d.stats.UpdateSuccess.Inc()
	b.Reset()
	if st.failing {
		d.log.Info("DNS resolution succeeds again", "cluster", d.cluster, "name", t.Name)
		st.failing = false
	}
	if len(res.Addresses) == 0 && !st.empty {
		logging.Warning(d.log, "DNS name has no address; the cluster has no host for it",
			"cluster", d.cluster, "name", t.Name, "details", res.Details)
	}
	st.empty = len(res.Addresses) == 0

	var changed bool
	if d.cfg.Logical {
		changed = d.updateLogical(st, t, res.Addresses)
	} else {
		changed = d.updateStrict(st, t, res.Addresses)
	}
	if changed {
		d.log.V(1).Info("DNS hosts changed", "cluster", d.cluster, "name", t.Name, "hosts", len(st.hosts))
		d.publish(d.priorities())
	} else {
		d.stats.UpdateNoRebuild.Inc()
	}
	return d.refreshAfter(res.Addresses)
}

// refreshAfter is the delay after a success: the refresh rate, or with
// respect_dns_ttl the TTL (when not zero), then the jitter.
func (d *Discovery) refreshAfter(addrs []dns.Address) time.Duration {
	next := d.cfg.RefreshRate
	if d.cfg.RespectTTL && len(addrs) > 0 {
		ttl := addrs[0].TTL
		if !d.cfg.Logical {
			for _, a := range addrs {
				ttl = min(ttl, a.TTL)
			}
		}
		if ttl > 0 {
			next = max(ttl, d.cfg.MinRefreshRate)
		}
	}
	if j := d.cfg.Jitter.Milliseconds(); j > 0 {
		next = saturatingAdd(next, time.Duration(d.rand()%uint64(j))*time.Millisecond)
	}
	return next
}

// updateStrict makes the target's hosts the answer's addresses: hosts
// whose address is still there are kept (with their stats and
// connections), new ones are added, the others removed. It reports
// whether the set changed (a new order alone is no change).
func (d *Discovery) updateStrict(st *targetState, t *Target, addrs []dns.Address) bool {
	old := make(map[string]*upstream.Host, len(st.hosts))
	for _, h := range st.hosts {
		old[h.Address] = h
	}
	hosts := make([]*upstream.Host, 0, len(addrs))
	seen := make(map[string]bool, len(addrs))
	changed := false
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a.IP, t.Port).String()
		if seen[addr] {
			continue
		}
		seen[addr] = true
		h := old[addr]
		if h == nil {
			h = newHost(t, addr)
			changed = true
		}
		hosts = append(hosts, h)
	}
	if len(hosts) != len(st.hosts) {
		changed = true
	}
	st.hosts = hosts
	return changed
}

// updateLogical makes the target's one host the answer's first address.
// As in Envoy, a new host replaces the old one when the first address or
// the list of addresses changed: connections already open keep their
// address, new ones go to the new host.
func (d *Discovery) updateLogical(st *targetState, t *Target, addrs []dns.Address) bool {
	ips := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		ips[i] = a.IP
	}
	if len(st.hosts) == 1 && slices.Equal(ips, st.addrs) {
		return false
	}
	st.addrs = ips
	st.hosts = []*upstream.Host{newHost(t, netip.AddrPortFrom(ips[0], t.Port).String())}
	return true
}

// newHost builds a host of target t at addr.
func newHost(t *Target, addr string) *upstream.Host {
	h := &upstream.Host{
		Address:        addr,
		Hostname:       t.Host.Hostname,
		Cluster:        t.Host.Cluster,
		Locality:       t.Host.Locality,
		Priority:       t.Host.Priority,
		Weight:         t.Host.Weight,
		LocalityWeight: t.Host.LocalityWeight,
		Canary:         t.Host.Canary,
		Metadata:       t.Host.Metadata,
		ConfigHealth:   t.Host.ConfigHealth,
	}
	h.LocalityMetadata = t.Host.LocalityMetadata
	return h
}

// priorities groups every target's hosts by priority, targets in
// configuration order. Every configured priority has a level, empty or
// not, as in Envoy.
func (d *Discovery) priorities() [][]*upstream.Host {
	levels := 1
	for _, t := range d.cfg.Targets {
		levels = max(levels, int(t.Host.Priority)+1)
	}
	out := make([][]*upstream.Host, levels)
	for i, t := range d.cfg.Targets {
		out[t.Host.Priority] = append(out[t.Host.Priority], d.targets[i].hosts...)
	}
	return out
}

// Hosts returns the current hosts per priority, for tests and diagnostics.
func (d *Discovery) Hosts() [][]*upstream.Host {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.priorities()
}

// String names the discovery's targets, for logs.
func (d *Discovery) String() string {
	names := make([]string, len(d.cfg.Targets))
	for i, t := range d.cfg.Targets {
		names[i] = t.Name
	}
	return d.cluster + "[" + strings.Join(names, ",") + "]"
}
