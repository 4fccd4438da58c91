package healthcheck

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	datacorev3 "github.com/envoyproxy/go-control-plane/envoy/data/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// outcome is what one check found.
type outcome int

const (
	outcomeSuccess outcome = iota
	outcomeDegraded
	// outcomeFailed: the host answered, and the answer fails it at once.
	outcomeFailed
	// outcomeRetriable: the host answered a retriable status; it fails
	// once unhealthy_threshold of them (or network failures) in a row.
	outcomeRetriable
	// outcomeNetwork: connecting or the exchange failed.
	outcomeNetwork
	// outcomeTimeout: no answer within the timeout.
	outcomeTimeout
	// outcomePassive: traffic found the host failed (an answer with
	// x-envoy-immediate-health-check-fail); it fails at once.
	outcomePassive
)

// result is one check's outcome; status is the HTTP status when there
// was one, immediateFail the x-envoy-immediate-health-check-fail header.
type result struct {
	outcome       outcome
	status        int
	immediateFail bool
}

// transition is Envoy's HealthTransition.
type transition int

const (
	unchanged transition = iota
	changed
	changePending
)

// prober runs one check on a host; a session owns one, and with it the
// connection kept between checks (reuse_connection).
type prober interface {
	// probe runs one check by deadline; ctx ends with the session.
	probe(ctx context.Context, deadline time.Time) result
	close()
}

// session checks one host address.
type session struct {
	c    *Checker
	addr string
	// hosts are the cluster's hosts with this address (one, normally),
	// guarded by c.mu: Sync swaps them as the cluster's hosts change.
	hosts  []*upstream.Host
	prober prober
	cancel context.CancelFunc

	firstDone chan struct{}
	firstOnce sync.Once

	// The check counts, guarded by c.mu (a passive failure comes from
	// traffic's goroutines).
	numHealthy, numUnhealthy uint32
	firstCheck               bool
}

// newSession prepares a host's session; run starts it.
func (c *Checker) newSession(addr string, hosts []*upstream.Host) *session {
	s := &session{c: c, addr: addr, hosts: hosts, firstDone: make(chan struct{}), firstCheck: true}
	s.prober = c.newProber(c.checkAddress(hosts[0]), hosts[0])
	return s
}

// stop ends the session; its goroutine closes the prober. A session never
// started is done at once. c.mu is held.
func (s *session) stop() {
	if s.cancel != nil {
		s.cancel()
		return
	}
	s.markFirst()
	s.prober.close()
}

// markFirst records that the first check is over (or will never come).
func (s *session) markFirst() { s.firstOnce.Do(func() { close(s.firstDone) }) }

// run checks the host until ctx ends: after initial_jitter, then at the
// intervals the outcomes choose.
func (s *session) run(ctx context.Context) {
	c := s.c
	defer c.wg.Done()
	defer s.prober.close()
	defer s.markFirst()
	var wait time.Duration
	if c.cfg.InitialJitter > 0 {
		wait = c.withJitter(0, c.cfg.InitialJitter)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		c.stats.attempt.Inc()
		deadline := time.Now().Add(c.cfg.Timeout)
		r := s.prober.probe(ctx, deadline)
		if ctx.Err() != nil {
			return
		}
		if r.outcome == outcomeNetwork && !time.Now().Before(deadline) {
			// It failed for running out of time.
			r = result{outcome: outcomeTimeout}
		}
		timer.Reset(aligned(time.Now(), s.apply(r)))
		s.markFirst()
	}
}

// apply records a check's result on the hosts and returns the wait before
// the next check. It calls Env.Changed when the coarse health of the host
// changed.
func (s *session) apply(r result) time.Duration {
	c := s.c
	c.mu.Lock()
	var (
		t       transition
		healthy bool
		rebuild bool
	)
	wasFailed := s.has(upstream.FailedActiveHC)
	switch r.outcome {
	case outcomeSuccess, outcomeDegraded:
		t, rebuild = s.handleSuccess(r.outcome == outcomeDegraded)
		healthy = true
	default:
		t, rebuild = s.handleFailure(r)
	}
	failed := s.newlyFailed(wasFailed)
	var passed []*upstream.Host
	if healthy && c.env.Passed != nil && !s.has(upstream.FailedActiveHC) {
		passed = append(passed, s.hosts...) // s.hosts changes under c.mu
	}
	c.mu.Unlock()
	if rebuild {
		c.env.Changed()
	}
	c.notifyFailed(failed)
	for _, h := range passed {
		c.env.Passed(h)
	}
	return c.interval(healthy, t)
}

// newlyFailed returns the session's hosts when a check just failed them
// (they were not failed before, wasFailed), for Env.Failed; nil
// otherwise. c.mu is held.
func (s *session) newlyFailed(wasFailed bool) []*upstream.Host {
	if wasFailed || s.c.env.Failed == nil || !s.has(upstream.FailedActiveHC) {
		return nil
	}
	return slices.Clone(s.hosts) // s.hosts changes under c.mu
}

// notifyFailed hands Env.Failed the hosts a check just failed, outside
// the checker's lock.
func (c *Checker) notifyFailed(hosts []*upstream.Host) {
	for _, h := range hosts {
		c.env.Failed(h)
	}
}

// setFlag and clearFlag edit the flags of every host of the address;
// they report whether the coarse health changed.
func (s *session) setFlag(f upstream.HealthFlag) bool {
	ch := false
	for _, h := range s.hosts {
		ch = h.SetHealthFlag(f) || ch
	}
	return ch
}

func (s *session) clearFlag(f upstream.HealthFlag) bool {
	ch := false
	for _, h := range s.hosts {
		ch = h.ClearHealthFlag(f) || ch
	}
	return ch
}

func (s *session) has(f upstream.HealthFlag) bool { return s.hosts[0].HasHealthFlag(f) }

// handleSuccess is Envoy's: a failed host turns healthy on its first
// check ever, or after healthy_threshold successes in a row. It reports
// the transition and whether the load balancer needs rebuilding. c.mu is
// held.
func (s *session) handleSuccess(degraded bool) (transition, bool) {
	c := s.c
	s.numUnhealthy = 0
	t := unchanged
	rebuild := false
	if s.has(upstream.FailedActiveHC) {
		s.numHealthy++
		if s.firstCheck || s.numHealthy >= c.cfg.HealthyThreshold {
			rebuild = s.clearFlag(upstream.ActiveHCTimeout|upstream.ExcludedViaImmediateHCFail) || rebuild
			rebuild = s.clearFlag(upstream.FailedActiveHC) || rebuild
			c.stats.healthy.Inc()
			t = changed
			c.events.addHealthy(s.addr, s.firstCheck)
		} else {
			t = changePending
		}
	}
	if t != changed && c.cfg.AlwaysLogSuccess {
		c.events.successful(s.addr)
	}
	t, rebuild = s.clearPending(t, rebuild)
	if degraded != s.has(upstream.DegradedActiveHC) {
		if degraded {
			rebuild = s.setFlag(upstream.DegradedActiveHC) || rebuild
			c.stats.degraded.Inc()
			c.events.degraded(s.addr)
		} else {
			c.events.noLongerDegraded(s.addr)
			rebuild = s.clearFlag(upstream.DegradedActiveHC) || rebuild
			c.stats.degraded.Dec()
		}
		if t == unchanged {
			t = changed
		}
	}
	c.stats.success.Inc()
	s.firstCheck = false
	return t, rebuild
}

// handleFailure is Envoy's: an answer that fails the host fails it at
// once; network failures, timeouts and retriable statuses only after
// unhealthy_threshold in a row. c.mu is held.
func (s *session) handleFailure(r result) (transition, bool) {
	c := s.c
	s.numHealthy = 0
	ftype := failureType(r.outcome)
	network := r.outcome == outcomeNetwork || r.outcome == outcomeTimeout
	rebuild := false
	if r.immediateFail {
		// Excluded: the balancer's counts change even for a host
		// already failed.
		rebuild = s.setFlag(upstream.ExcludedViaImmediateHCFail)
	}
	t := unchanged
	if !s.has(upstream.FailedActiveHC) {
		s.numUnhealthy++
		if (!network && r.outcome != outcomeRetriable) || s.numUnhealthy >= c.cfg.UnhealthyThreshold {
			rebuild = s.setFlag(upstream.FailedActiveHC) || rebuild
			c.stats.healthy.Dec()
			t = changed
			c.events.ejectUnhealthy(s.addr, ftype, r.status)
		} else {
			t = changePending
		}
	}
	// A failed host that timed out shows it; any other outcome clears it,
	// so that the flag follows the latest reason.
	if r.outcome == outcomeTimeout && s.has(upstream.FailedActiveHC) {
		s.setFlag(upstream.ActiveHCTimeout)
	} else {
		s.clearFlag(upstream.ActiveHCTimeout)
	}
	t, rebuild = s.clearPending(t, rebuild)
	if s.firstCheck || c.cfg.AlwaysLogFailures {
		c.events.unhealthy(s.addr, ftype, s.firstCheck, r.status)
	}
	c.stats.failure.Inc()
	if network {
		c.stats.networkFailure.Inc()
	} else if r.outcome == outcomePassive {
		c.stats.passiveFailure.Inc()
	}
	s.firstCheck = false
	return t, rebuild
}

// clearPending clears PendingActiveHC after a first check: a change
// either way, as in Envoy.
func (s *session) clearPending(t transition, rebuild bool) (transition, bool) {
	if s.has(upstream.PendingActiveHC) {
		s.clearFlag(upstream.PendingActiveHC)
		return changed, true
	}
	return t, rebuild
}

// tick is the grid checks are aligned to: a check due within a tick of
// others runs with them, so that a thousand hosts checked every second
// wake the process a few dozen times a second rather than a thousand,
// and their answers come back together.
const tick = 50 * time.Millisecond

// aligned is the wait from now until the tick nearest now+wait, never
// less than a millisecond.
func aligned(now time.Time, wait time.Duration) time.Duration {
	d := now.Add(wait).Round(tick).Sub(now)
	return max(d, time.Millisecond)
}

// failureType is the event log's failure type of an outcome.
func failureType(o outcome) datacorev3.HealthCheckFailureType {
	switch o {
	case outcomeNetwork:
		return datacorev3.HealthCheckFailureType_NETWORK
	case outcomeTimeout:
		return datacorev3.HealthCheckFailureType_NETWORK_TIMEOUT
	case outcomePassive:
		return datacorev3.HealthCheckFailureType_PASSIVE
	}
	return datacorev3.HealthCheckFailureType_ACTIVE
}

// interval is the wait before the next check, Envoy's choice: until the
// cluster had traffic, no_traffic_interval (no_traffic_healthy_interval
// for a healthy host); then interval for a healthy host and
// unhealthy_interval for a failed one, or their edge intervals while a
// threshold is being counted; plus the jitter.
func (c *Checker) interval(healthy bool, t transition) time.Duration {
	var base time.Duration
	switch {
	case !c.env.HadTraffic():
		base = c.cfg.NoTrafficInterval
		if healthy && t != changePending {
			base = c.cfg.NoTrafficHealthyInterval
		}
	case !healthy && t == changePending:
		base = c.cfg.UnhealthyEdgeInterval
	case !healthy:
		base = c.cfg.UnhealthyInterval
	case t == changePending:
		base = c.cfg.HealthyEdgeInterval
	default:
		base = c.cfg.Interval
	}
	return c.withJitter(base, c.cfg.IntervalJitter)
}

// withJitter adds interval_jitter_percent of base and up to jitter, both
// drawn at random, then bounds the result by the runtime's
// health_check.min_interval and health_check.max_interval (ms) and to at
// least 1 ms, as Envoy does.
func (c *Checker) withJitter(base, jitter time.Duration) time.Duration {
	if mod := uint64(c.cfg.IntervalJitterPercent) * uint64(base) / 100; mod > 0 && c.env.Rand != nil {
		base += time.Duration(c.env.Rand() % mod)
	}
	if jitter > 0 && c.env.Rand != nil {
		base += time.Duration(c.env.Rand() % uint64(jitter))
	}
	maxMS := c.runtimeUint("health_check.max_interval", math.MaxUint64)
	minMS := c.runtimeUint("health_check.min_interval", 0)
	if maxMS < uint64(math.MaxInt64/time.Millisecond) {
		base = min(base, time.Duration(maxMS)*time.Millisecond)
	}
	if minMS < uint64(math.MaxInt64/time.Millisecond) {
		base = max(base, time.Duration(minMS)*time.Millisecond)
	}
	return max(base, time.Millisecond)
}
