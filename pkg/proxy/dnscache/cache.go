package dnscache

import (
	"context"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/keyvalue/filebased"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// Status is how a Load found its host.
type Status uint8

const (
	// InCache: the host's first resolution is done; its Host tells the
	// outcome.
	InCache Status = iota
	// Loading: the host is being resolved; Loaded.Done is closed when
	// the first resolution is done.
	Loading
	// Overflow: the cache holds max_hosts hosts and this one is not among
	// them (host_overflow).
	Overflow
)

// Host is one host of the cache, shared by everything that loaded it.
type Host struct {
	// Key is the cache key (host:port); Name the host to resolve and
	// Port the port of its address.
	Key  string
	Name string
	Port uint16

	c *Cache
	// done is closed once the first resolution ended.
	done chan struct{}
	// state is the latest outcome.
	state atomic.Pointer[hostState]
	// lastUsed is when the host was last loaded or picked, as
	// nanoseconds of the cache's clock.
	lastUsed atomic.Int64

	// Guarded by the cache's mu.
	resolving bool
	timer     *time.Timer
	// storedRefresh is when a host loaded from the key-value store is
	// resolved again after the cache starts, 0 for the others.
	storedRefresh time.Duration
	backoff       *dns.BackoffState
	removed       bool
}

// hostState is a host's outcome: its address, once one was found, and the
// details of the latest resolution that left it without one.
type hostState struct {
	addr    netip.AddrPort
	details string
	failed  bool
}

// Address is the host's resolved address, false while it has none.
func (h *Host) Address() (netip.AddrPort, bool) {
	st := h.state.Load()
	if st == nil || !st.addr.IsValid() {
		return netip.AddrPort{}, false
	}
	return st.addr, true
}

// Details says why the host has no address, for response details.
func (h *Host) Details() string {
	if st := h.state.Load(); st != nil {
		return st.details
	}
	return ""
}

// Done is closed once the host's first resolution ended.
func (h *Host) Done() <-chan struct{} { return h.done }

// Touch marks the host used now, keeping it past host_ttl.
func (h *Host) Touch() { h.lastUsed.Store(h.c.now().UnixNano()) }

// Subscriber follows a cache's hosts: the dynamic_forward_proxy cluster.
// Its methods run on the cache's goroutines, never under its lock.
type Subscriber interface {
	// HostChanged reports a host's new address (its first, or a change).
	HostChanged(h *Host, addr netip.AddrPort)
	// HostRemoved reports a host with an address leaving the cache.
	HostRemoved(h *Host)
}

// Cache is one named DNS cache. Its methods are safe for concurrent use.
type Cache struct {
	cfg      *Config
	resolver dns.Resolver
	st       cacheStats
	log      logr.Logger
	now      func() time.Time
	rand     func() uint64
	// kv is the key_value_config store of the resolutions, nil for none.
	kv *filebased.Store

	// ctx ends when the cache stops: resolutions in flight are cut and
	// no timer resolves again.
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	hosts   map[string]*Host
	subs    []Subscriber
	started bool

	pending atomic.Int64
	// rt is the runtime (nil: none); pendingKey its key that overrides
	// max_pending_requests.
	rt         func() *runtime.Snapshot
	pendingKey string
}

// maxPending is the pending requests' limit in force: the runtime key
// dns_cache.<name>.circuit_breakers when the runtime has it, else
// max_pending_requests, read at each acquisition as Envoy's resource
// limit reads it.
func (c *Cache) maxPending() int64 {
	if c.rt == nil {
		return c.cfg.MaxPending
	}
	snap := c.rt()
	if snap == nil {
		return c.cfg.MaxPending
	}
	return int64(min(snap.Uint64(c.pendingKey, uint64(c.cfg.MaxPending)), math.MaxInt64))
}

// Load finds host (a Host header value or a server name; defaultPort
// applies when it has no port) in the cache, and starts resolving it when
// it is not there. A host whose last resolution found no address is
// resolved again, as Envoy does with reresolve_null_addresses.
func (c *Cache) Load(host string, defaultPort uint16) (*Host, Status) {
	key := Key(host, defaultPort)
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hosts[key]
	if h != nil && isDone(h) {
		st := h.state.Load()
		if st.addr.IsValid() && !(c.cfg.NoRefreshOnFailure && st.failed) {
			h.Touch()
			return h, InCache
		}
	}
	if h != nil && !isDone(h) {
		h.Touch()
		return h, Loading
	}
	if len(c.hosts) >= c.cfg.MaxHosts {
		c.st.hostOverflow.Inc()
		return nil, Overflow
	}
	if h != nil {
		// Resolved without an address: start over with a new host.
		c.removeLocked(h)
	}
	h = c.addLocked(key, defaultPort)
	return h, Loading
}

// isDone reports whether h's first resolution ended.
func isDone(h *Host) bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// Lookup returns the host of key when the cache has it, resolved or not.
func (c *Cache) Lookup(key string) *Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[key]
}

// AcquirePending takes one of the cache's pending requests
// (dns_cache_circuit_breaker.max_pending_requests); false, counted in
// dns_rq_pending_overflow, when they are all taken. release gives it back.
func (c *Cache) AcquirePending() (release func(), ok bool) {
	limit := c.maxPending()
	if c.pending.Add(1) > limit {
		c.pending.Add(-1)
		c.st.pendingOverflow.Inc()
		return nil, false
	}
	c.st.pendingChanged(c.pending.Load(), limit)
	var once sync.Once
	return func() {
		once.Do(func() {
			c.st.pendingChanged(c.pending.Add(-1), c.maxPending())
		})
	}, true
}

// Subscribe adds s to the cache's subscribers and tells it the hosts that
// already have an address.
func (c *Cache) Subscribe(s Subscriber) {
	c.mu.Lock()
	c.subs = append(c.subs, s)
	var known []*Host
	for _, h := range c.hosts {
		if _, ok := h.Address(); ok {
			known = append(known, h)
		}
	}
	c.mu.Unlock()
	for _, h := range known {
		addr, _ := h.Address()
		s.HostChanged(h, addr)
	}
}

// Unsubscribe removes s.
func (c *Cache) Unsubscribe(s Subscriber) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = slices.DeleteFunc(c.subs, func(x Subscriber) bool { return x == s })
}

// start resolves preresolve_hostnames and lets loads resolve. Loads made
// before resolve once the cache starts.
func (c *Cache) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return
	}
	c.started = true
	for _, p := range c.cfg.Preresolve {
		key := Key(p.Host, p.Port)
		if c.hosts[key] == nil && len(c.hosts) < c.cfg.MaxHosts {
			c.addLocked(key, p.Port)
		}
	}
	for _, h := range c.hosts {
		switch {
		case h.storedRefresh > 0:
			h.timer = time.AfterFunc(h.storedRefresh, func() { c.refresh(h) })
			h.storedRefresh = 0
		case !h.resolving && h.timer == nil:
			c.resolveLocked(h)
		}
	}
	if c.kv != nil {
		c.kv.Start()
	}
}

// close stops every resolution and timer.
func (c *Cache) close() {
	c.stop()
	if c.kv != nil {
		c.kv.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		if h.timer != nil {
			h.timer.Stop()
		}
	}
}

// addLocked creates the host of key and, once the cache has started,
// resolves it. c.mu is held.
func (c *Cache) addLocked(key string, defaultPort uint16) *Host {
	// key may view a request's buffer, which is reused.
	key = strings.Clone(key)
	name, port := splitKey(key, defaultPort)
	h := &Host{Key: key, Name: name, Port: port, c: c, done: make(chan struct{})}
	h.backoff = dns.NewBackoffState(c.cfg.Failure, c.cfg.RefreshRate, c.rand)
	h.Touch()
	c.hosts[key] = h
	c.st.hostAdded.Inc()
	c.st.numHosts.Inc()
	if c.started {
		c.resolveLocked(h)
	}
	return h
}

// removeLocked takes h out of the cache. c.mu is held; subscribers are
// told after (see forget).
func (c *Cache) removeLocked(h *Host) {
	if h.removed {
		return
	}
	h.removed = true
	if h.timer != nil {
		h.timer.Stop()
	}
	delete(c.hosts, h.Key)
	if c.kv != nil {
		c.kv.Remove(h.Key)
	}
	c.st.hostRemoved.Inc()
	c.st.numHosts.Dec()
	if _, ok := h.Address(); ok {
		subs := slices.Clone(c.subs)
		go func() {
			for _, s := range subs {
				s.HostRemoved(h)
			}
		}()
	}
}

// splitKey splits a cache key into the name to resolve and the port.
func splitKey(key string, defaultPort uint16) (string, uint16) {
	name, p, err := net.SplitHostPort(key)
	if err != nil {
		return key, defaultPort
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return name, defaultPort
	}
	return name, uint16(n)
}

// resolveLocked starts a resolution of h on a goroutine of its own. c.mu
// is held.
func (c *Cache) resolveLocked(h *Host) {
	h.resolving = true
	h.timer = nil
	c.st.queryAttempt.Inc()
	go c.resolve(h)
}

// resolve runs one resolution of h and applies it.
func (c *Cache) resolve(h *Host) {
	var (
		res      dns.Result
		timedOut bool
	)
	if ip, err := netip.ParseAddr(strings.Trim(h.Name, "[]")); err == nil {
		// An IP literal needs no query.
		res = dns.Result{Status: dns.Completed, Addresses: []dns.Address{{IP: ip.Unmap()}}}
	} else {
		ctx, cancel := c.ctx, context.CancelFunc(func() {})
		if c.cfg.QueryTimeout > 0 {
			ctx, cancel = context.WithTimeout(c.ctx, c.cfg.QueryTimeout)
		}
		res = c.resolver.Resolve(ctx, h.Name, c.cfg.Family)
		timedOut = c.ctx.Err() == nil && ctx.Err() != nil
		cancel()
		if timedOut {
			res = dns.Result{Status: dns.Failed, Details: "resolve_timeout"}
		}
	}
	if c.ctx.Err() != nil {
		return
	}
	c.finish(h, res, timedOut)
}

// finish applies a resolution's result to h, as Envoy's finishResolve:
// an address once found sticks through failures and empty answers; the
// host's waiters are released after its first resolution; the next one
// is scheduled.
func (c *Cache) finish(h *Host, res dns.Result, timedOut bool) {
	if timedOut {
		c.st.queryTimeout.Inc()
	}
	if res.Status == dns.Failed {
		c.st.queryFailure.Inc()
	} else {
		c.st.querySuccess.Inc()
	}
	// The query itself succeeded (counted above); an answer whose every
	// address is filtered out is then a failed resolution.
	if n := c.cfg.filter.apply(&res); n > 0 {
		c.st.addressFilterOut.Add(uint64(n))
	}
	failed := res.Status == dns.Failed || len(res.Addresses) == 0
	details := strings.Join(strings.Fields(res.Details), "_")
	if failed {
		details = "dns_resolution_failure{" + details + "}"
	}
	var (
		changed bool
		addr    netip.AddrPort
		subs    []Subscriber
		next    time.Duration
	)
	c.mu.Lock()
	if h.removed {
		c.mu.Unlock()
		return
	}
	h.resolving = false
	old := h.state.Load()
	switch {
	case len(res.Addresses) > 0:
		addr = netip.AddrPortFrom(res.Addresses[0].IP.Unmap(), h.Port)
		if c.kv != nil {
			c.kv.AddOrUpdate(h.Key, storedValue(res.Addresses, h.Port))
		}
		if old == nil || old.addr != addr {
			changed = true
			c.st.hostAddressChanged.Inc()
			subs = slices.Clone(c.subs)
		}
		h.state.Store(&hostState{addr: addr, failed: res.Status == dns.Failed})
	case old == nil || !old.addr.IsValid():
		h.state.Store(&hostState{details: details, failed: res.Status == dns.Failed})
	}
	if res.Status == dns.Completed {
		h.backoff.Reset()
		next = c.cfg.RefreshRate
		if len(res.Addresses) > 0 {
			next = max(c.cfg.MinRefreshRate, res.Addresses[0].TTL.Truncate(time.Second))
		}
	} else if !c.cfg.NoRefreshOnFailure {
		next = h.backoff.Next()
	}
	if next > 0 && c.ctx.Err() == nil {
		h.timer = time.AfterFunc(next, func() { c.refresh(h) })
	}
	first := !isDone(h)
	c.mu.Unlock()
	// The subscribers (the clusters) have the host before the requests
	// waiting for it go on, as in Envoy.
	if changed {
		for _, s := range subs {
			s.HostChanged(h, addr)
		}
	}
	if first {
		close(h.done)
	}
	if dl := c.log.V(1); dl.Enabled() {
		dl.Info("dns cache resolution complete", "cache", c.cfg.Name, "host", h.Key, "address", addr.String(), "details", details)
	}
}

// refresh runs when h's refresh timer fires: a host unused for host_ttl
// is removed, any other resolved again.
func (c *Cache) refresh(h *Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.removed || c.ctx.Err() != nil {
		return
	}
	if c.now().Sub(time.Unix(0, h.lastUsed.Load())) > c.cfg.HostTTL {
		c.removeLocked(h)
		return
	}
	c.resolveLocked(h)
}
