package server

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
)

// outlierEventsPath is where the event log's path sits in the bootstrap.
const outlierEventsPath = "cluster_manager.outlier_detection.event_log_path"

// openOutlierEvents opens the bootstrap's outlier-detection event log
// (every cluster's ejections and un-ejections), nil when none is set.
func openOutlierEvents(b *bootstrapv3.Bootstrap) (*outlier.EventLog, error) {
	path := b.GetClusterManager().GetOutlierDetection().GetEventLogPath()
	if path == "" {
		return nil, nil
	}
	l, err := outlier.OpenEventLog(path, nil)
	if err != nil {
		return nil, &bootstrap.FieldError{Path: outlierEventsPath, Reason: err.Error()}
	}
	return l, nil
}
