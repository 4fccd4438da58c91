package server

import (
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// OutlierFigures are a cluster's success-rate figures of the last outlier
// detection interval, each -1 when not computed.
type OutlierFigures struct {
	SuccessRateAverage                      float64
	SuccessRateEjectionThreshold            float64
	LocalOriginSuccessRateAverage           float64
	LocalOriginSuccessRateEjectionThreshold float64
}

// ClusterOutlier returns the named cluster's outlier-detection figures,
// which the text form of /clusters prints, and false when it has no
// outlier detection.
func (s *Server) ClusterOutlier(name string) (OutlierFigures, bool) {
	if s.clusters == nil {
		return OutlierFigures{}, false
	}
	c := s.clusters.Cluster(name)
	if c == nil || c.Outlier() == nil {
		return OutlierFigures{}, false
	}
	d := c.Outlier()
	return OutlierFigures{
		SuccessRateAverage:                      d.SuccessRateAverage(false),
		SuccessRateEjectionThreshold:            d.SuccessRateEjectionThreshold(false),
		LocalOriginSuccessRateAverage:           d.SuccessRateAverage(true),
		LocalOriginSuccessRateEjectionThreshold: d.SuccessRateEjectionThreshold(true),
	}, true
}

// addOutlier fills a cluster's entry with its outlier detection's
// ejection thresholds when above 0, as Envoy does.
func addOutlier(cs *adminv3.ClusterStatus, d *outlier.Detector) {
	if d == nil {
		return
	}
	if v := d.SuccessRateEjectionThreshold(false); v > 0 {
		cs.SuccessRateEjectionThreshold = &typev3.Percent{Value: v}
	}
	if v := d.SuccessRateEjectionThreshold(true); v > 0 {
		cs.LocalOriginSuccessRateEjectionThreshold = &typev3.Percent{Value: v}
	}
}

// hostSuccessRates sets a host's success rates of the last interval when
// outlier detection computed them.
func hostSuccessRates(hs *adminv3.HostStatus, h *upstream.Host) {
	m, ok := h.Outlier().(*outlier.Monitor)
	if !ok {
		return
	}
	if v := m.SuccessRate(); v >= 0 {
		hs.SuccessRate = &typev3.Percent{Value: v}
	}
	if v := m.LocalOriginSuccessRate(); v >= 0 {
		hs.LocalOriginSuccessRate = &typev3.Percent{Value: v}
	}
}
