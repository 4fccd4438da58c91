package outlier

import (
	"sync"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// The runtime keys Envoy reads the settings under.
const (
	keyInterval                      = "outlier_detection.interval_ms"
	keyBaseEjectionTime              = "outlier_detection.base_ejection_time_ms"
	keyMaxEjectionTime               = "outlier_detection.max_ejection_time_ms"
	keyMaxEjectionTimeJitter         = "outlier_detection.max_ejection_time_jitter_ms"
	keyMaxEjectionPercent            = "outlier_detection.max_ejection_percent"
	keyConsecutive5xx                = "outlier_detection.consecutive_5xx"
	keyConsecutiveGateway            = "outlier_detection.consecutive_gateway_failure"
	keyConsecutiveLocalOrigin        = "outlier_detection.consecutive_local_origin_failure"
	keyEnforcingConsecutive5xx       = "outlier_detection.enforcing_consecutive_5xx"
	keyEnforcingConsecutiveGateway   = "outlier_detection.enforcing_consecutive_gateway_failure"
	keyEnforcingConsecutiveLocal     = "outlier_detection.enforcing_consecutive_local_origin_failure"
	keyEnforcingSuccessRate          = "outlier_detection.enforcing_success_rate"
	keyEnforcingLocalSuccessRate     = "outlier_detection.enforcing_local_origin_success_rate"
	keyEnforcingFailurePercentage    = "outlier_detection.enforcing_failure_percentage"
	keyEnforcingFailurePercentageLoc = "outlier_detection.enforcing_failure_percentage_local_origin"
	keySuccessRateMinimumHosts       = "outlier_detection.success_rate_minimum_hosts"
	keySuccessRateRequestVolume      = "outlier_detection.success_rate_request_volume"
	keySuccessRateStdevFactor        = "outlier_detection.success_rate_stdev_factor"
	keyFailurePercentageThreshold    = "outlier_detection.failure_percentage_threshold"
	keyFailurePercentageMinimumHosts = "outlier_detection.failure_percentage_minimum_hosts"
	keyFailurePercentageVolume       = "outlier_detection.failure_percentage_request_volume"
)

// Deps are what a detector needs from its cluster.
type Deps struct {
	// Cluster is the cluster's name, for the event log.
	Cluster string
	Stats   *Stats
	// Runtime returns the current runtime snapshot; nil for none.
	Runtime func() *runtime.Snapshot
	Now     func() time.Time
	Rand    func() uint64
	// HealthChanged is called, without the detector's lock, after an
	// ejection or un-ejection changed a host's health: the cluster
	// rebuilds its load balancer.
	HealthChanged func()
	// Ejected is called for each host an ejection takes out of service,
	// on a goroutine of its own (never under the detector's lock): the
	// cluster closes the host's connections then
	// (close_connections_on_host_health_failure). nil for none.
	Ejected func(h *upstream.Host)
	// Events is the event log (cluster_manager.outlier_detection
	// event_log_path), nil for none.
	Events *EventLog
}

// Detector is one cluster's outlier detection.
type Detector struct {
	cfg  Config
	deps Deps

	mu       sync.Mutex
	monitors []*Monitor
	byAddr   map[string]*Monitor
	// members are the monitors of the current hosts: a report that
	// reaches a removed host's monitor ejects nothing.
	members map[*Monitor]bool
	active  uint64
	// sr are the success-rate average and ejection threshold of the last
	// interval per origin, -1 when not computed.
	sr      [2]srNums
	stop    chan struct{}
	started bool
}

type srNums struct{ average, threshold float64 }

// New builds a detector with no hosts; SetHosts gives it the cluster's.
func New(cfg Config, deps Deps) *Detector {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	d := &Detector{cfg: cfg, deps: deps, byAddr: map[string]*Monitor{}, stop: make(chan struct{})}
	d.sr = [2]srNums{{-1, -1}, {-1, -1}}
	return d
}

// Config returns the detector's configuration.
func (d *Detector) Config() Config { return d.cfg }

// snapshot is the current runtime snapshot, nil for none.
func (d *Detector) snapshot() *runtime.Snapshot {
	if d.deps.Runtime == nil {
		return nil
	}
	return d.deps.Runtime()
}

// threshold reads an integer setting under its runtime key.
func (d *Detector) threshold(key string, def uint64) uint64 {
	if rt := d.snapshot(); rt != nil {
		return rt.Uint64(key, def)
	}
	return def
}

// millis reads a duration setting under its runtime key (milliseconds).
func (d *Detector) millis(key string, def time.Duration) time.Duration {
	return time.Duration(d.threshold(key, uint64(def.Milliseconds()))) * time.Millisecond
}

// SetHosts makes hosts the detector's, before they are published: a host
// that already has this detector's monitor keeps it; a new host object
// at the address of a host it replaces (an EDS update) takes over that
// host's monitor and health flags, as Envoy keeps a host across updates;
// the others get a new monitor. Hosts no longer there are forgotten (an
// ejected one no longer counts in ejections_active).
func (d *Detector) SetHosts(hosts []*upstream.Host) {
	d.mu.Lock()
	defer d.mu.Unlock()
	monitors := make([]*Monitor, len(hosts))
	kept := make(map[*Monitor]bool, len(hosts))
	// Hosts that stay (the same objects) keep their monitors first, so
	// that a new object at the same address never takes one of those.
	for i, h := range hosts {
		if m, ok := h.Outlier().(*Monitor); ok && m.d == d && !kept[m] {
			monitors[i] = m
			kept[m] = true
		}
	}
	for i, h := range hosts {
		if monitors[i] != nil {
			continue
		}
		m := d.byAddr[h.Address]
		if m == nil || kept[m] {
			m = newMonitor(d, h)
		} else {
			h.CopyHealthFlags(m.host)
			m.host = h
		}
		h.SetOutlier(m)
		monitors[i] = m
		kept[m] = true
	}
	byAddr := make(map[string]*Monitor, len(hosts))
	for i, h := range hosts {
		if _, dup := byAddr[h.Address]; !dup {
			byAddr[h.Address] = monitors[i]
		}
	}
	for _, m := range d.monitors {
		if !kept[m] && m.ejected {
			m.ejected = false
			d.active--
			d.deps.Stats.EjectionsActive.Dec()
		}
	}
	d.monitors, d.byAddr, d.members = monitors, byAddr, kept
}

// Start runs the interval timer until Stop. Starting twice does nothing.
func (d *Detector) Start() {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return
	}
	d.started = true
	d.mu.Unlock()
	go d.run()
}

// Stop ends the interval timer. The detector forgets its ejections (the
// cluster is going away).
func (d *Detector) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	d.deps.Stats.EjectionsActive.Add(-int64(d.active))
	d.active = 0
}

func (d *Detector) run() {
	t := time.NewTimer(d.millis(keyInterval, d.cfg.Interval))
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.Tick()
			t.Reset(max(d.millis(keyInterval, d.cfg.Interval), time.Millisecond))
		}
	}
}

// Tick runs one interval's sweep (the timer calls it; tests call it
// directly): un-ejects hosts whose ejection time is over, evaluates the
// last interval's success rates and failure percentages, and shortens
// the ejection backoff of hosts that stayed in service.
func (d *Detector) Tick() {
	changed := d.tick()
	if changed && d.deps.HealthChanged != nil {
		d.deps.HealthChanged()
	}
}

func (d *Detector) tick() (changed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.stop:
		return false
	default:
	}
	now := d.deps.Now()
	base := d.millis(keyBaseEjectionTime, d.cfg.BaseEjectionTime)
	maxTime := d.millis(keyMaxEjectionTime, d.cfg.MaxEjectionTime)
	for _, m := range d.monitors {
		if m.ejected && min(base*time.Duration(m.backoff), maxTime)+m.jitter <= now.Sub(m.lastEjection) {
			changed = d.uneject(m, now) || changed
		}
		for o := range m.sr {
			m.sr[o].swap()
			m.sr[o].setRate(-1)
		}
	}
	changed = d.successRates(external, now) || changed
	changed = d.successRates(local, now) || changed
	interval := d.millis(keyInterval, d.cfg.Interval)
	for _, m := range d.monitors {
		if !m.ejected && !m.lastUnejection.IsZero() && now.Sub(m.lastUnejection) >= interval && m.backoff > 0 {
			m.backoff--
		}
	}
	if d.cfg.DetectDegradedHosts {
		changed = d.sweepDegraded(now, base, maxTime, interval) || changed
	}
	return changed
}

// onConsecutive ejects m's host for a consecutive-failure threshold its
// counter just reached, on the reporting goroutine.
func (d *Detector) onConsecutive(m *Monitor, t datav3.OutlierEjectionType) {
	changed := d.consecutive(m, t)
	if changed && d.deps.HealthChanged != nil {
		d.deps.HealthChanged()
	}
}

func (d *Detector) consecutive(m *Monitor, t datav3.OutlierEjectionType) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.members[m] || m.ejected {
		// Removed from the cluster, or already out.
		return false
	}
	d.deps.Stats.detected[t].Inc()
	changed := d.eject(m, t, d.deps.Now())
	switch t {
	case datav3.OutlierEjectionType_CONSECUTIVE_5XX:
		d.deps.Stats.consecutive5xx.Inc()
		m.consecutive5xx.Store(0)
	case datav3.OutlierEjectionType_CONSECUTIVE_GATEWAY_FAILURE:
		m.consecutiveGateway.Store(0)
	case datav3.OutlierEjectionType_CONSECUTIVE_LOCAL_ORIGIN_FAILURE:
		m.consecutiveLocal.Store(0)
	}
	return changed
}

// enforcing returns the enforcing_* percentage of an ejection type.
func (d *Detector) enforcing(t datav3.OutlierEjectionType) runtime.Fraction {
	c := d.cfg
	f := func(key string, v uint64) runtime.Fraction {
		return runtime.Fraction{Key: key, Numerator: v, Denominator: 100}
	}
	switch t {
	case datav3.OutlierEjectionType_CONSECUTIVE_5XX:
		return f(keyEnforcingConsecutive5xx, c.EnforcingConsecutive5xx)
	case datav3.OutlierEjectionType_CONSECUTIVE_GATEWAY_FAILURE:
		return f(keyEnforcingConsecutiveGateway, c.EnforcingConsecutiveGateway)
	case datav3.OutlierEjectionType_CONSECUTIVE_LOCAL_ORIGIN_FAILURE:
		return f(keyEnforcingConsecutiveLocal, c.EnforcingConsecutiveLocalOrigin)
	case datav3.OutlierEjectionType_SUCCESS_RATE:
		return f(keyEnforcingSuccessRate, c.EnforcingSuccessRate)
	case datav3.OutlierEjectionType_SUCCESS_RATE_LOCAL_ORIGIN:
		return f(keyEnforcingLocalSuccessRate, c.EnforcingLocalOriginSuccessRate)
	case datav3.OutlierEjectionType_FAILURE_PERCENTAGE:
		return f(keyEnforcingFailurePercentage, c.EnforcingFailurePercentage)
	default:
		return f(keyEnforcingFailurePercentageLoc, c.EnforcingFailurePercentageLocalOrigin)
	}
}

// eject ejects m's host if max_ejection_percent allows and the type's
// enforcing percentage draws it, as Envoy's ejectHost; it reports whether
// the host's health changed. Called with d.mu held.
func (d *Detector) eject(m *Monitor, t datav3.OutlierEjectionType, now time.Time) bool {
	st := d.deps.Stats
	maxPercent := min(100, d.threshold(keyMaxEjectionPercent, d.cfg.MaxEjectionPercent))
	ejectedPercent := 100 * float64(d.active+1) / float64(len(d.monitors))
	allowed := ejectedPercent <= float64(maxPercent)
	if d.cfg.AlwaysEjectOneHost && d.active == 0 {
		allowed = true
	}
	if !allowed {
		st.EjectionsOverflow.Inc()
		return false
	}
	if t == datav3.OutlierEjectionType_CONSECUTIVE_5XX || t == datav3.OutlierEjectionType_SUCCESS_RATE {
		st.EjectionsTotal.Inc()
	}
	var rt runtime.Reader
	if s := d.snapshot(); s != nil {
		rt = s
	}
	if !d.enforcing(t).Enabled(rt, d.random()) {
		d.deps.Events.eject(d, m, t, false, now)
		return false
	}
	d.active++
	st.EjectionsActive.Inc()
	st.EnforcedTotal.Inc()
	st.enforced[t].Inc()
	m.ejected = true
	changed := m.host.SetHealthFlag(upstream.FailedOutlierCheck)
	if d.deps.Ejected != nil {
		go d.deps.Ejected(m.host)
	}
	m.numEjections++
	m.lastEjection = now
	base := d.millis(keyBaseEjectionTime, d.cfg.BaseEjectionTime)
	maxTime := d.millis(keyMaxEjectionTime, d.cfg.MaxEjectionTime)
	jitterMax := d.threshold(keyMaxEjectionTimeJitter, uint64(d.cfg.MaxEjectionTimeJitter.Milliseconds()))
	m.jitter = time.Duration(d.random()%(jitterMax+1)) * time.Millisecond
	if base*time.Duration(m.backoff) < maxTime+base {
		m.backoff++
	}
	d.deps.Events.eject(d, m, t, true, now)
	return changed
}

// uneject returns m's host to service. Called with d.mu held.
func (d *Detector) uneject(m *Monitor, now time.Time) bool {
	d.active--
	d.deps.Stats.EjectionsActive.Dec()
	m.ejected = false
	changed := m.host.ClearHealthFlag(upstream.FailedOutlierCheck)
	m.resetConsecutive()
	m.lastUnejection = now
	d.deps.Events.uneject(d, m, now)
	return changed
}

func (d *Detector) random() uint64 {
	if d.deps.Rand == nil {
		return 0
	}
	return d.deps.Rand()
}

// ActiveHealthCheckPassed is the active health checker's hook: a host the
// checker just found healthy (and that it does not fail) returns to
// service at once if outlier detection ejected it, unless
// successful_active_health_check_uneject_host is false. A nil detector or
// a host it does not know does nothing.
func (d *Detector) ActiveHealthCheckPassed(h *upstream.Host) {
	if d == nil || !d.cfg.SuccessfulActiveHealthCheckUnejectHost {
		return
	}
	changed := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		m := d.byAddr[h.Address]
		if m == nil || !m.ejected || h.HasHealthFlag(upstream.FailedActiveHC) {
			return false
		}
		return d.uneject(m, d.deps.Now())
	}()
	if changed && d.deps.HealthChanged != nil {
		d.deps.HealthChanged()
	}
}

// SuccessRateAverage returns the average success rate of the hosts that
// had enough requests in the last interval, per origin (local when
// localOrigin), -1 when not computed; /clusters shows it.
func (d *Detector) SuccessRateAverage(localOrigin bool) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sr[originOf(localOrigin)].average
}

// SuccessRateEjectionThreshold returns the last interval's success-rate
// ejection threshold, -1 when not computed.
func (d *Detector) SuccessRateEjectionThreshold(localOrigin bool) float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sr[originOf(localOrigin)].threshold
}

func originOf(localOrigin bool) origin {
	if localOrigin {
		return local
	}
	return external
}
