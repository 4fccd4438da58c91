package outlier

import (
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stats are a cluster's outlier_detection.* stats, Envoy's names, the
// deprecated ones Envoy still counts included.
type Stats struct {
	EjectionsActive   *stats.Gauge
	EjectionsTotal    *stats.Counter // deprecated: consecutive 5xx and success-rate ejections that fit max_ejection_percent
	EjectionsOverflow *stats.Counter
	EnforcedTotal     *stats.Counter
	// consecutive5xx and successRate are the deprecated per-type counts.
	consecutive5xx *stats.Counter
	successRate    *stats.Counter
	detected       map[datav3.OutlierEjectionType]*stats.Counter
	enforced       map[datav3.OutlierEjectionType]*stats.Counter
}

// typeNames are the ejection types' stat suffixes.
var typeNames = []struct {
	t    datav3.OutlierEjectionType
	name string
}{
	{datav3.OutlierEjectionType_CONSECUTIVE_5XX, "consecutive_5xx"},
	{datav3.OutlierEjectionType_CONSECUTIVE_GATEWAY_FAILURE, "consecutive_gateway_failure"},
	{datav3.OutlierEjectionType_SUCCESS_RATE, "success_rate"},
	{datav3.OutlierEjectionType_FAILURE_PERCENTAGE, "failure_percentage"},
	{datav3.OutlierEjectionType_CONSECUTIVE_LOCAL_ORIGIN_FAILURE, "consecutive_local_origin_failure"},
	{datav3.OutlierEjectionType_SUCCESS_RATE_LOCAL_ORIGIN, "local_origin_success_rate"},
	{datav3.OutlierEjectionType_FAILURE_PERCENTAGE_LOCAL_ORIGIN, "local_origin_failure_percentage"},
}

// NewStats creates the stats in scope ("cluster.<name>."), all of them at
// once, as Envoy does.
func NewStats(scope stats.Scope) *Stats {
	sc := scope.Scope("outlier_detection.")
	s := &Stats{
		EjectionsActive:   sc.Gauge("ejections_active"),
		EjectionsTotal:    sc.Counter("ejections_total"),
		EjectionsOverflow: sc.Counter("ejections_overflow"),
		EnforcedTotal:     sc.Counter("ejections_enforced_total"),
		consecutive5xx:    sc.Counter("ejections_consecutive_5xx"),
		successRate:       sc.Counter("ejections_success_rate"),
		detected:          map[datav3.OutlierEjectionType]*stats.Counter{},
		enforced:          map[datav3.OutlierEjectionType]*stats.Counter{},
	}
	for _, tn := range typeNames {
		s.detected[tn.t] = sc.Counter("ejections_detected_" + tn.name)
		s.enforced[tn.t] = sc.Counter("ejections_enforced_" + tn.name)
	}
	return s
}
