package outlier

import (
	"math"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/cluster/v3"
)

// hostRate is one host's success rate over the last interval.
type hostRate struct {
	m    *Monitor
	rate float64
}

// ejectionThreshold is Envoy's success-rate outlier math: the mean of the
// hosts' success rates, and the mean minus factor standard deviations
// (population deviation) as the threshold below which a host is an
// outlier.
func ejectionThreshold(sum float64, rates []hostRate, factor float64) (mean, threshold float64) {
	n := float64(len(rates))
	mean = sum / n
	var variance float64
	for _, r := range rates {
		variance += (r.rate - mean) * (r.rate - mean)
	}
	variance /= n
	return mean, mean - factor*math.Sqrt(variance)
}

// successRates runs one origin's success-rate and failure-percentage
// detection over the last interval's buckets, as Envoy's
// processSuccessRateEjections. Called with d.mu held; it reports whether
// a host's health changed.
func (d *Detector) successRates(o origin, now time.Time) (changed bool) {
	srMinHosts := d.threshold(keySuccessRateMinimumHosts, d.cfg.SuccessRateMinimumHosts)
	srVolume := d.threshold(keySuccessRateRequestVolume, d.cfg.SuccessRateRequestVolume)
	fpMinHosts := d.threshold(keyFailurePercentageMinimumHosts, d.cfg.FailurePercentageMinimumHosts)
	fpVolume := d.threshold(keyFailurePercentageVolume, d.cfg.FailurePercentageRequestVolume)
	d.sr[o] = srNums{-1, -1}
	n := uint64(len(d.monitors))
	if n < srMinHosts && n < fpMinHosts {
		return false
	}
	var srHosts, fpHosts []hostRate
	var sum float64
	for _, m := range d.monitors {
		if m.ejected {
			continue
		}
		rate, volume, ok := m.sr[o].finished()
		if !ok {
			continue
		}
		if volume >= min(srVolume, fpVolume) {
			m.sr[o].setRate(rate)
		}
		if volume >= srVolume {
			srHosts = append(srHosts, hostRate{m, rate})
			sum += rate
		}
		if volume >= fpVolume {
			fpHosts = append(fpHosts, hostRate{m, rate})
		}
	}
	st := d.deps.Stats
	if len(srHosts) > 0 && uint64(len(srHosts)) >= srMinHosts {
		factor := float64(d.threshold(keySuccessRateStdevFactor, d.cfg.SuccessRateStdevFactor)) / 1000
		mean, threshold := ejectionThreshold(sum, srHosts, factor)
		d.sr[o] = srNums{mean, threshold}
		t := datav3.OutlierEjectionType_SUCCESS_RATE
		if o == local {
			t = datav3.OutlierEjectionType_SUCCESS_RATE_LOCAL_ORIGIN
		}
		for _, hr := range srHosts {
			if hr.rate < threshold && !hr.m.ejected {
				st.successRate.Inc()
				st.detected[t].Inc()
				changed = d.eject(hr.m, t, now) || changed
			}
		}
	}
	if len(fpHosts) > 0 && uint64(len(fpHosts)) >= fpMinHosts {
		threshold := float64(d.threshold(keyFailurePercentageThreshold, d.cfg.FailurePercentageThreshold))
		t := datav3.OutlierEjectionType_FAILURE_PERCENTAGE
		if o == local {
			t = datav3.OutlierEjectionType_FAILURE_PERCENTAGE_LOCAL_ORIGIN
		}
		for _, hr := range fpHosts {
			if 100-hr.rate >= threshold && !hr.m.ejected {
				st.detected[t].Inc()
				changed = d.eject(hr.m, t, now) || changed
			}
		}
	}
	return changed
}
