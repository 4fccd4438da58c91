package outlier

import (
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DetectsDegraded reports whether the cluster's outlier detection
// degrades hosts that answer with x-envoy-degraded (detect_degraded_hosts).
func (m *Monitor) DetectsDegraded() bool { return m.d.cfg.DetectDegradedHosts }

// PutDegraded reports a response with x-envoy-degraded: the host turns
// degraded (upstream.DegradedOutlierDetection), taking load only when the
// healthy hosts cannot carry it, and stays so for base_ejection_time times
// its degradations, capped by max_ejection_time; a host already degraded
// stays as it is. A degraded host is not ejected: max_ejection_percent
// does not apply.
func (m *Monitor) PutDegraded() {
	d := m.d
	changed := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.members[m] || m.degraded {
			return false
		}
		m.degraded = true
		m.lastDegraded = d.deps.Now()
		base := d.millis(keyBaseEjectionTime, d.cfg.BaseEjectionTime)
		maxTime := d.millis(keyMaxEjectionTime, d.cfg.MaxEjectionTime)
		if base*time.Duration(m.degradeBackoff) < maxTime+base {
			m.degradeBackoff++
		}
		return m.host.SetHealthFlag(upstream.DegradedOutlierDetection)
	}()
	if changed && d.deps.HealthChanged != nil {
		d.deps.HealthChanged()
	}
}

// sweepDegraded is the interval's sweep of degradations: a host whose
// degradation time is over is degraded no more, and the backoff of a host
// that stayed undegraded for an interval shrinks, as the ejections'. It
// reports whether a host's health changed. Called with d.mu held.
func (d *Detector) sweepDegraded(now time.Time, base, maxTime, interval time.Duration) (changed bool) {
	for _, m := range d.monitors {
		switch {
		case m.degraded && min(base*time.Duration(m.degradeBackoff), maxTime) <= now.Sub(m.lastDegraded):
			m.degraded = false
			m.lastUndegraded = now
			changed = m.host.ClearHealthFlag(upstream.DegradedOutlierDetection) || changed
		case !m.degraded && !m.lastUndegraded.IsZero() && now.Sub(m.lastUndegraded) >= interval && m.degradeBackoff > 0:
			m.degradeBackoff--
		}
	}
	return changed
}
