package cluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/healthcheck"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// buildHealthCheck checks a cluster's health_checks. Outrigger runs one
// health checker per cluster (Envoy's several at once are refused).
// Errors are relative to the cluster.
func buildHealthCheck(c *clusterv3.Cluster, s *settings, isOrigDst bool) (*healthcheck.Config, []error) {
	hcs := c.GetHealthChecks()
	if len(hcs) == 0 {
		return nil, nil
	}
	var errs []error
	if len(hcs) > 1 {
		errs = append(errs, configErrorf(index("health_checks", 1), "Outrigger runs one health checker per cluster; configure one health check"))
	}
	if isOrigDst {
		errs = append(errs, configErrorf("health_checks", "an ORIGINAL_DST cluster's hosts come and go with connections; active health checks are not supported on it"))
	}
	cfg, cerrs := healthcheck.Compile(hcs[0], healthcheck.ClusterInfo{
		Name:  s.name,
		HTTP2: s.protocol.http2 || s.protocol.downstream || s.protocol.auto,
	})
	for _, err := range cerrs {
		errs = append(errs, prefixed(index("health_checks", 0), err))
	}
	if p := cfg.EventLogPath; p != "" && !dirExists(p) {
		errs = append(errs, configErrorf(join(index("health_checks", 0), "event_log_path"), "%q: its directory does not exist", p))
	}
	for i, p := range cfg.EventSinks {
		if !dirExists(p) {
			errs = append(errs, configErrorf(join(index("health_checks", 0), index("event_logger", i)+".typed_config.event_log_path"), "%q: its directory does not exist", p))
		}
	}
	return cfg, errs
}

// hcState is a cluster's active health checking.
type hcState struct {
	checker *healthcheck.Checker
	// hostsWarm is what the first hosts wait for (a DNS cluster's first
	// resolution, an EDS cluster's first assignment); nil for a STATIC
	// cluster, whose hosts are there from the start.
	hostsWarm <-chan struct{}
	// warm is closed once every host of the cluster's first host set
	// had its first check: the cluster's initialization ends then.
	warm      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	stopped   chan struct{}
}

// newHealthChecker builds the cluster's health checker; its sessions
// (and its event log) start with startHealthChecks.
func (c *Cluster) newHealthChecker(cfg *healthcheck.Config, scope stats.Scope, d clusterDeps) {
	env := healthcheck.Env{
		Cluster:    c.settings.name,
		Scope:      scope,
		Dial:       c.dialCheck,
		TLS:        func(h *upstream.Host) bool { return c.checkTLS(h) != nil },
		HadTraffic: func() bool { return c.stats.UpstreamCxTotal.Value() > 0 },
		Changed:    c.healthChanged,
		Failed:     c.hostFailed,
		// The detector is built before the checker, and nil-safe.
		Passed:  func(h *upstream.Host) { c.outlier.ActiveHealthCheckPassed(h) },
		Runtime: d.runtime,
		Now:     d.now,
		Rand:    d.rand,
		Log:     d.log,
	}
	if c.outlier != nil {
		// Built before the checker: a host a check passes leaves its
		// ejection (successful_active_health_check_uneject_host).
		env.Passed = c.outlier.ActiveHealthCheckPassed
	}
	c.hc = &hcState{checker: healthcheck.New(cfg, env), warm: make(chan struct{}), stopped: make(chan struct{})}
	if c.eds != nil {
		c.hc.hostsWarm = c.eds.warm
	}
}

// hcWaitFor makes the health checks' first round wait for warm, a DNS
// cluster's first resolution.
func (c *Cluster) hcWaitFor(warm <-chan struct{}) {
	if c.hc != nil {
		c.hc.hostsWarm = warm
	}
}

// startHealthChecks launches the cluster's checks, if it has any.
func (c *Cluster) startHealthChecks() {
	hc := c.hc
	if hc == nil {
		return
	}
	hc.startOnce.Do(func() {
		hc.checker.Start()
		go hc.waitFirstRound()
	})
}

// waitFirstRound closes warm once the hosts are in and each had its first
// check, or the checks stopped.
func (hc *hcState) waitFirstRound() {
	defer close(hc.warm)
	if hc.hostsWarm != nil {
		select {
		case <-hc.hostsWarm:
		case <-hc.stopped:
			return
		}
	}
	select {
	case <-hc.checker.FirstChecks():
	case <-hc.stopped:
	}
}

// stopHealthChecks ends the cluster's checks and waits for them.
func (c *Cluster) stopHealthChecks() {
	hc := c.hc
	if hc == nil {
		return
	}
	hc.stopOnce.Do(func() { close(hc.stopped) })
	// Never started: nothing else would end the warming.
	hc.startOnce.Do(func() { close(hc.warm) })
	hc.checker.Stop()
}

// healthWarm is closed once the cluster's health checks finished their
// first round; nil when it has none.
func (c *Cluster) healthWarm() <-chan struct{} {
	if c.hc == nil {
		return nil
	}
	return c.hc.warm
}

// syncHealthChecks hands the checker the cluster's new hosts, before the
// load balancer of the set is built: new hosts start failed, hosts kept
// (by address) keep their health. c.updateMu is held.
func (c *Cluster) syncHealthChecks(hs *hostSet) {
	if c.hc != nil {
		c.hc.checker.Sync(hs.hosts)
	}
}

// HealthChecked reports whether the cluster has active health checks.
func (c *Cluster) HealthChecked() bool { return c.hc != nil }

// ImmediateHealthCheckFail fails h at once: an upstream answered traffic
// with x-envoy-immediate-health-check-fail. Only a cluster with active
// health checks acts on it, as in Envoy.
func (c *Cluster) ImmediateHealthCheckFail(h *upstream.Host) {
	if c.Delegates() {
		if u := c.carrier(h); u != nil {
			u.ImmediateHealthCheckFail(h)
		}
		return
	}
	if c.hc != nil {
		c.hc.checker.ImmediateFail(h)
	}
}

// keepHealthyRemoved is Envoy's rule for a health-checked cluster's hosts
// that discovery (DNS, EDS) removes: a host still passing its checks
// stays, flagged /pending_dynamic_removal, until it fails one
// (healthChanged then drops it), unless ignore_health_on_host_removal
// says to drop it at once. A kept host that discovery brings back loses
// the flag. c.updateMu is held.
func (c *Cluster) keepHealthyRemoved(priorities [][]*upstream.Host) [][]*upstream.Host {
	old := c.set.Load()
	if c.hc == nil || c.settings.ignoreHealthOnRemoval || old == nil {
		return priorities
	}
	wanted := map[string]bool{}
	for _, level := range priorities {
		for _, h := range level {
			wanted[h.Address] = true
			// A host kept by the update (the same object) that a health
			// change removed meanwhile is wanted again all the same.
			h.ClearHealthFlag(upstream.PendingDynamicRemoval)
		}
	}
	for _, h := range old.hosts {
		if wanted[h.Address] {
			// Back in the set: the flag would be copied to the new host.
			h.ClearHealthFlag(upstream.PendingDynamicRemoval)
			continue
		}
		if h.HasHealthFlag(upstream.FailedActiveHC) || h.FailedEDSHealth() {
			continue
		}
		h.SetHealthFlag(upstream.PendingDynamicRemoval)
		p := int(h.Priority)
		for len(priorities) <= p {
			priorities = append(priorities, nil)
		}
		priorities[p] = append(priorities[p], h)
	}
	return priorities
}

// healthChanged follows a change of a host's health: a failed host that
// discovery removed leaves the set; otherwise the load balancer is
// rebuilt (HealthChanged).
func (c *Cluster) healthChanged() {
	c.updateMu.Lock()
	hs := c.set.Load()
	gone := func(h *upstream.Host) bool { return h.HasHealthFlag(upstream.PendingDynamicRemoval) && !h.Healthy() }
	if hs == nil || !slices.ContainsFunc(hs.hosts, gone) {
		c.updateMu.Unlock()
		c.HealthChanged()
		return
	}
	defer c.updateMu.Unlock()
	levels := make([][]*upstream.Host, len(hs.priorities))
	for i, level := range hs.priorities {
		for _, h := range level {
			if !gone(h) {
				levels[i] = append(levels[i], h)
			}
		}
	}
	c.installLocked(levels, true, nil)
}

// dialCheck opens a health check's connection to host h at address: the
// cluster's dialer (bind and keep-alive settings) and, when h's checks
// are TLS (see checkTLS), that TLS offering alpn, within the connect
// timeout. Checks are not traffic: they count in no upstream_cx_* stat.
func (c *Cluster) dialCheck(ctx context.Context, h *upstream.Host, address string, alpn []string) (net.Conn, error) {
	c.countCheckSocket()
	ctx, cancel := context.WithTimeout(ctx, c.settings.connectTimeout)
	defer cancel()
	conn, err := c.dialVia(ctx, h, address, func(ctx context.Context) (net.Conn, error) { return c.dial(ctx, address) })
	if err == nil {
		err = c.sendProxyHeader(ctx, conn)
	}
	if err != nil {
		return nil, err
	}
	cl := c.checkTLS(h)
	if cl == nil {
		return c.tapped(conn), nil
	}
	tc, err := cl.Handshake(ctx, conn, alpn, c.ssl)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return c.tapped(tc), nil
}

// dirExists reports whether the directory of file p exists, which an
// event log needs to be opened when the checks start.
func dirExists(p string) bool {
	st, err := os.Stat(filepath.Dir(p))
	return err == nil && st.IsDir()
}
