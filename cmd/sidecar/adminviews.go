package main

import (
	"github.com/outrigger-dev/outrigger/pkg/admin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/server"
)

// The admin declares the views it needs and the proxy never imports the
// admin, so the few views whose shapes differ are adapted here.

var (
	_ admin.ServerInfoSource   = (*server.Server)(nil)
	_ admin.HealthControl      = (*server.Server)(nil)
	_ admin.Quitter            = (*server.Server)(nil)
	_ admin.MemorySource       = (*server.Server)(nil)
	_ admin.CertSource         = (*server.Server)(nil)
	_ admin.StatsSource        = (*server.Server)(nil)
	_ admin.BreakerEventSource = (*server.Server)(nil)
	_ admin.ConfigDumpSource   = (*server.Server)(nil)
	_ admin.ListenerSource     = (*server.Server)(nil)
	_ admin.ClusterSource      = clusterView{}
	_ admin.RuntimeStore       = runtimeView{}
	_ admin.LogControl         = logView{}
	_ admin.DrainControl       = drainView{}
)

// clusterView presents the clusters to /clusters, with their outlier
// detection's figures in the admin's shape.
type clusterView struct{ *server.Server }

func (v clusterView) Outlier(cluster string) (admin.OutlierSummary, bool) {
	f, ok := v.ClusterOutlier(cluster)
	return admin.OutlierSummary{
		SuccessRateAverage:                      f.SuccessRateAverage,
		SuccessRateEjectionThreshold:            f.SuccessRateEjectionThreshold,
		LocalOriginSuccessRateAverage:           f.LocalOriginSuccessRateAverage,
		LocalOriginSuccessRateEjectionThreshold: f.LocalOriginSuccessRateEjectionThreshold,
	}, ok
}

// runtimeView presents the server's layered runtime to /runtime and
// /runtime_modify.
type runtimeView struct{ srv *server.Server }

func (v runtimeView) LayerNames() []string                 { return v.srv.Runtime().LayerNames() }
func (v runtimeView) HasAdminLayer() bool                  { return v.srv.Runtime().HasAdminLayer() }
func (v runtimeView) Modify(pairs map[string]string) error { return v.srv.ModifyRuntime(pairs) }

func (v runtimeView) Entries() []admin.RuntimeEntry {
	entries := v.srv.Runtime().Entries()
	out := make([]admin.RuntimeEntry, len(entries))
	for i, e := range entries {
		out[i] = admin.RuntimeEntry{Key: e.Key, LayerValues: e.LayerValues, FinalValue: e.FinalValue}
	}
	return out
}

// logView presents the log registry and files to /logging and /reopen_logs.
type logView struct{ srv *server.Server }

func (v logView) FineGrain() bool   { return v.srv.Logs().FineGrain() }
func (v logView) ReopenLogs() error { return v.srv.ReopenLogs() }

func (v logView) Loggers() []admin.LoggerLevel {
	levels := v.srv.Logs().Loggers()
	out := make([]admin.LoggerLevel, len(levels))
	for i, nl := range levels {
		out[i] = admin.LoggerLevel{Name: nl.Name, Level: nl.Level.String()}
	}
	return out
}

func (v logView) SetLevels(levels map[string]string) error {
	parsed := make(map[string]logging.Level, len(levels))
	for name, lv := range levels {
		level, err := logging.ParseLevel(lv)
		if err != nil {
			return err
		}
		parsed[name] = level
	}
	return v.srv.Logs().SetLevels(parsed)
}

func (v logView) SetAllLevels(lv string) error {
	level, err := logging.ParseLevel(lv)
	if err != nil {
		return err
	}
	v.srv.Logs().SetAll(level)
	return nil
}

// drainView presents the server's listener drain to /drain_listeners: the
// admin passes its options as one struct, the server takes plain flags.
type drainView struct{ srv *server.Server }

// DrainListeners implements admin.DrainControl.
func (v drainView) DrainListeners(o admin.DrainOptions) error {
	return v.srv.DrainListeners(o.InboundOnly, o.Graceful, o.SkipExit)
}
