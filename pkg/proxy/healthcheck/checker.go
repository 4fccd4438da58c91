package healthcheck

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DialFunc opens a check's connection to address ("ip:port"), host h's:
// TCP, and when h's connections are TLS the TLS handshake offering alpn.
type DialFunc func(ctx context.Context, h *upstream.Host, address string, alpn []string) (net.Conn, error)

// Env is what a checker needs from its cluster.
type Env struct {
	// Cluster is the cluster's name (the event log's cluster_name).
	Cluster string
	// Scope is the cluster's stats scope ("cluster.<name>.").
	Scope stats.Scope
	// Dial opens check connections (required).
	Dial DialFunc
	// TLS says whether a host's check connections are TLS (HTTP/2 checks
	// then say :scheme https); nil: none are.
	TLS func(h *upstream.Host) bool
	// HadTraffic reports whether the cluster ever sent traffic upstream:
	// until it has, hosts are checked every no_traffic_interval.
	HadTraffic func() bool
	// Changed is called, outside the checker's lock, after a host's
	// coarse health changed: the cluster rebuilds its load balancer.
	Changed func()
	// Failed is called, outside the checker's lock, for each host a
	// check (or an x-envoy-immediate-health-check-fail answer) just
	// failed: the cluster closes its connections then
	// (close_connections_on_host_health_failure). nil for none.
	Failed func(h *upstream.Host)
	// Passed is called, outside the checker's lock, for each host a check
	// just found healthy (not failed by active checking): outlier
	// detection returns an ejected host to service then
	// (successful_active_health_check_uneject_host). nil for none.
	Passed func(h *upstream.Host)
	// Runtime is the current runtime snapshot (health_check.min_interval,
	// health_check.max_interval, health_check.verify_cluster); nil for
	// none.
	Runtime func() *runtime.Snapshot
	// Now is the clock of the event log; Rand draws the jitter.
	Now  func() time.Time
	Rand func() uint64
	// Log is the "hc" component logger.
	Log logr.Logger
}

// Checker runs a cluster's active health checks: one session per host
// address. Sync follows the cluster's host set; Start launches the
// sessions; Stop ends them and waits.
type Checker struct {
	cfg    *Config
	env    Env
	stats  checkerStats
	events *eventLog

	mu       sync.Mutex
	sessions map[string]*session // by host address
	started  bool
	stopped  bool
	wg       sync.WaitGroup
}

// New builds a checker; nothing runs until Start.
func New(cfg *Config, env Env) *Checker {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Log.GetSink() == nil {
		env.Log = logr.Discard()
	}
	if env.HadTraffic == nil {
		env.HadTraffic = func() bool { return true }
	}
	if env.Changed == nil {
		env.Changed = func() {}
	}
	return &Checker{cfg: cfg, env: env, stats: newCheckerStats(env.Scope), sessions: map[string]*session{}}
}

// openEvents opens the event log, if any: when the checks start, so that
// validating a configuration creates no file. A file that cannot be
// opened is logged, and the checks run without it. c.mu is held.
func (c *Checker) openEvents() {
	paths := c.cfg.EventLogPaths()
	if len(paths) == 0 || c.events != nil {
		return
	}
	ev, err := openEventLog(paths, c.cfg.Kind, c.env.Cluster, c.env.Now)
	if err != nil {
		c.env.Log.Error(err, "health check event log not opened; checks run without it", "cluster", c.env.Cluster)
		return
	}
	c.events = ev
}

// Sync makes the checker follow hosts, the cluster's new host set; the
// cluster calls it before it builds the load balancer of the set. A host
// whose address has a session keeps that session and takes over the
// health flags of the host it replaces (EDS builds new hosts for every
// assignment); a new address starts failed, as in Envoy, and gets a
// session (and waits for its first check, excluded, with
// PendingNewHosts); sessions of addresses no longer there stop.
func (c *Checker) Sync(hosts []*upstream.Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byAddr := make(map[string][]*upstream.Host, len(hosts))
	for _, h := range hosts {
		if h.HealthCheck != nil && h.HealthCheck.Disabled {
			// disable_active_health_check: never checked, and never
			// failed by the checks.
			continue
		}
		byAddr[h.Address] = append(byAddr[h.Address], h)
	}
	for addr, s := range c.sessions {
		if hs := byAddr[addr]; hs == nil || !sameCheck(s.hosts[0], hs[0]) {
			// Gone, or checked elsewhere or otherwise now (its
			// health_check_config changed): a new session, as for a new
			// host.
			delete(c.sessions, addr)
			c.untrackLocked(s)
			s.stop()
		}
	}
	if c.stopped {
		return
	}
	for addr, hs := range byAddr {
		if s := c.sessions[addr]; s != nil {
			prev := s.hosts[0]
			for _, h := range hs {
				if h != prev {
					h.CopyHealthFlags(prev)
				}
			}
			s.hosts = hs
			continue
		}
		f := upstream.FailedActiveHC
		if c.cfg.PendingNewHosts {
			f |= upstream.PendingActiveHC
		}
		for _, h := range hs {
			h.SetHealthFlag(f)
		}
		s := c.newSession(addr, hs)
		c.sessions[addr] = s
		c.trackLocked(s)
		if c.started {
			c.launchLocked(s)
		}
	}
}

// Start launches the sessions; later hosts start as Sync adds them.
func (c *Checker) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.stopped {
		return
	}
	c.started = true
	c.openEvents()
	for _, s := range c.sessions {
		c.launchLocked(s)
	}
}

// FirstChecks is closed once every host the cluster has now has had its
// first check (or left, or the checker stopped): a cluster with health
// checks finishes initializing then, as in Envoy.
func (c *Checker) FirstChecks() <-chan struct{} {
	c.mu.Lock()
	waits := make([]<-chan struct{}, 0, len(c.sessions))
	for _, s := range c.sessions {
		waits = append(waits, s.firstDone)
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, w := range waits {
			<-w
		}
	}()
	return done
}

// Stop ends every session, waits for their goroutines and closes the
// event log. The hosts keep their flags.
func (c *Checker) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	for addr, s := range c.sessions {
		delete(c.sessions, addr)
		c.untrackLocked(s)
		s.stop()
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.events != nil {
		c.events.close()
	}
}

// ImmediateFail records an x-envoy-immediate-health-check-fail answer to
// traffic from h: the host is excluded and failed at once, a passive
// failure (Envoy's HealthCheckHostMonitor). Hosts without a session (the
// checker stopped, the host left) are left alone.
func (c *Checker) ImmediateFail(h *upstream.Host) {
	c.mu.Lock()
	s := c.sessions[h.Address]
	if s == nil {
		c.mu.Unlock()
		return
	}
	wasFailed := s.has(upstream.FailedActiveHC)
	_, rebuild := s.handleFailure(result{outcome: outcomePassive, immediateFail: true})
	failed := s.newlyFailed(wasFailed)
	c.mu.Unlock()
	if rebuild {
		c.env.Changed()
	}
	c.notifyFailed(failed)
}

// launchLocked starts a session's goroutine. c.mu is held.
func (c *Checker) launchLocked(s *session) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	c.wg.Add(1)
	go s.run(ctx)
}

// trackLocked counts a new session's host in the healthy and degraded
// gauges as Envoy does; untrackLocked takes it out. c.mu is held.
func (c *Checker) trackLocked(s *session) {
	h := s.hosts[0]
	if !h.HasHealthFlag(upstream.FailedActiveHC) {
		c.stats.healthy.Inc()
	}
	if h.HasHealthFlag(upstream.DegradedActiveHC) {
		c.stats.degraded.Inc()
	}
}

func (c *Checker) untrackLocked(s *session) {
	h := s.hosts[0]
	if !h.HasHealthFlag(upstream.FailedActiveHC) {
		c.stats.healthy.Dec()
	}
	if h.HasHealthFlag(upstream.DegradedActiveHC) {
		c.stats.degraded.Dec()
	}
}

// sameCheck reports whether hosts a and b, at one address, are checked
// the same way (the same health_check_config).
func sameCheck(a, b *upstream.Host) bool {
	x, y := a.HealthCheck, b.HealthCheck
	return x == y || (x != nil && y != nil && *x == *y)
}

// checkAddress is where a host's checks connect: its address, or its
// health_check_config's; with the port of its health_check_config, else
// alt_port's, instead of the address's own when set.
func (c *Checker) checkAddress(h *upstream.Host) string {
	addr := h.Address
	port := c.cfg.AltPort
	if hc := h.HealthCheck; hc != nil {
		if hc.Port != 0 {
			port = hc.Port
		}
		if hc.IP.IsValid() {
			// The configuration made Port the address's port when
			// port_value was not set.
			return netip.AddrPortFrom(hc.IP, hc.Port).String()
		}
	}
	if port == 0 {
		return addr
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return netip.AddrPortFrom(ap.Addr(), port).String()
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// runtimeUint reads a runtime integer, def when unset or without runtime.
func (c *Checker) runtimeUint(key string, def uint64) uint64 {
	if c.env.Runtime == nil {
		return def
	}
	snap := c.env.Runtime()
	if snap == nil {
		return def
	}
	return snap.Uint64(key, def)
}
