package cluster

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// buildOutlier checks a cluster's outlier_detection; nil for none.
func buildOutlier(od *clusterv3.OutlierDetection) (*outlier.Config, []error) {
	if od == nil {
		return nil, nil
	}
	cfg, errs := outlier.ParseConfig(od)
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		if ce, ok := err.(*outlier.ConfigError); ok {
			out = append(out, configErrorf(join("outlier_detection", ce.Path), "%s", ce.Reason))
			continue
		}
		out = append(out, prefixed("outlier_detection", err))
	}
	return &cfg, out
}

// newOutlierDetector builds the cluster's detector, nil without
// outlier_detection. Its stats exist from the start, as Envoy's.
func (c *Cluster) newOutlierDetector(scope stats.Scope, d clusterDeps) *outlier.Detector {
	cfg := c.settings.outlier
	if cfg == nil {
		return nil
	}
	return outlier.New(*cfg, outlier.Deps{
		Cluster:       c.settings.name,
		Stats:         outlier.NewStats(scope),
		Runtime:       d.runtime,
		Now:           d.now,
		Rand:          d.rand,
		HealthChanged: c.HealthChanged,
		Ejected:       c.hostFailed,
		Events:        d.outlierEvents,
	})
}

// startOutlier starts the detector's interval timer (once the server
// runs: --mode validate builds clusters and never starts them).
func (c *Cluster) startOutlier() {
	if c.outlier != nil {
		c.outlier.Start()
	}
}

// Outlier returns the cluster's outlier detector, nil without
// outlier_detection: the active health checker calls its
// ActiveHealthCheckPassed, and /clusters reads its success rates.
func (c *Cluster) Outlier() *outlier.Detector { return c.outlier }

// reportConnectFailure tells outlier detection that a connection to h
// could not be opened: a timeout, or another local-origin failure. The
// success of a connection is the caller's to report (a request's
// connection is reported per request by the router, a TCP proxy's as
// final), as in Envoy.
func reportConnectFailure(h *upstream.Host, timedOut bool) {
	m := h.Outlier()
	if m == nil {
		return
	}
	if timedOut {
		m.PutResult(upstream.LocalOriginTimeout, 0)
		return
	}
	m.PutResult(upstream.LocalOriginConnectFailed, 0)
}
