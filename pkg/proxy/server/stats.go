package server

import (
	"context"
	"crypto/fips140"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// FilterRE2RuntimeKey selects the regex engine of /stats?filter=: RE2
// unless the runtime says "false".
const FilterRE2RuntimeKey = "proxy.reloadable_features.admin_stats_filter_use_re2"

// serverStats are the server.* stats (Envoy's ALL_SERVER_STATS). The
// gauges that change are refreshed at each flush, as Envoy does, so they
// are stale between flushes.
type serverStats struct {
	uptime             *stats.Gauge
	memoryAllocated    *stats.Gauge
	memoryHeapSize     *stats.Gauge
	memoryPhysicalSize *stats.Gauge
	totalConnections   *stats.Gauge
	parentConnections  *stats.Gauge
	daysUntilCert      *stats.Gauge
	secondsUntilOCSP   *stats.Gauge
	recentLookups      *stats.Gauge
	initializationTime *stats.Histogram
	droppedFlushes     *stats.Counter
	watchdogMiss       *stats.Counter
	watchdogMegaMiss   *stats.Counter
}

// statsRuntime is the stats machinery the server owns: the flusher, its
// sinks and the admin listener's stats.
type statsRuntime struct {
	server  serverStats
	flusher *stats.Flusher
	hystrix *stats.HystrixSink // nil without a dashboard sink
	admin   *adminStats

	mu sync.Mutex
	// connSources report the active downstream connections of the
	// listeners, summed into server.total_connections.
	connSources []func() int64
	// stop ends the flusher and the watchdog; nil when not running.
	stop func()
	// nextEndpoint is where the next dial of a statsd cluster starts.
	nextEndpoint atomic.Uint32
}

// newStatsStore builds the server's store from the bootstrap stats_config
// and the --stats-tag options, which Envoy adds as fixed tags to every
// stat, before the configuration's own. When the configuration is invalid
// it still returns a default store, so that building can go on and report
// every other error too.
func newStatsStore(cfg *metricsv3.StatsConfig, cliTags []options.StatsTag) (*stats.Store, error) {
	if len(cliTags) > 0 {
		merged := &metricsv3.StatsConfig{}
		if cfg != nil {
			merged = proto.Clone(cfg).(*metricsv3.StatsConfig)
		}
		fixed := make([]*metricsv3.TagSpecifier, 0, len(cliTags)+len(merged.GetStatsTags()))
		for _, t := range cliTags {
			for i, spec := range merged.GetStatsTags() {
				if spec.GetTagName() == t.Name {
					return stats.NewStore(), fmt.Errorf("stats_config.stats_tags[%d].tag_name: tag name %q is also given with --stats-tag", i, t.Name)
				}
			}
			fixed = append(fixed, &metricsv3.TagSpecifier{TagName: t.Name, TagValue: &metricsv3.TagSpecifier_FixedValue{FixedValue: t.Value}})
		}
		merged.StatsTags = append(fixed, merged.GetStatsTags()...)
		cfg = merged
	}
	st, err := stats.NewStoreWithConfig(cfg)
	if err != nil {
		return stats.NewStore(), err
	}
	return st, nil
}

// initStats creates the server stats with their start-up values, the
// admin listener's stats, the sinks and the flusher. Errors name the
// configuration field.
func (s *Server) initStats(cfg Config) error {
	var errs []error
	if cfg.Bootstrap.GetStatsFlushOnAdmin() && cfg.Bootstrap.GetStatsFlushInterval() != nil {
		// Envoy refuses the pair too: the interval would never be used.
		errs = append(errs, errors.New("stats_flush_on_admin: only one of stats_flush_interval and stats_flush_on_admin may be set"))
	}
	sc := s.stats.Scope("server.")
	sr := &statsRuntime{
		server: serverStats{
			uptime:             sc.Gauge("uptime"),
			memoryAllocated:    sc.Gauge("memory_allocated"),
			memoryHeapSize:     sc.Gauge("memory_heap_size"),
			memoryPhysicalSize: sc.Gauge("memory_physical_size"),
			totalConnections:   sc.Gauge("total_connections"),
			parentConnections:  sc.Gauge("parent_connections"),
			daysUntilCert:      sc.Gauge("days_until_first_cert_expiring"),
			secondsUntilOCSP:   sc.Gauge("seconds_until_first_ocsp_response_expiring"),
			recentLookups:      sc.Gauge("stats_recent_lookups"),
			initializationTime: sc.Histogram("initialization_time_ms", stats.UnitMilliseconds),
			droppedFlushes:     sc.Counter("dropped_stat_flushes"),
			watchdogMiss:       sc.Counter("main_thread.watchdog_miss"),
			watchdogMegaMiss:   sc.Counter("main_thread.watchdog_mega_miss"),
		},
		admin: newAdminStats(s.stats, s.now),
	}
	s.statsRT = sr

	// Counters Envoy creates at start; the ones with no cause to move in
	// Outrigger stay at zero so that dashboards find them.
	sc.Counter("static_unknown_fields").Add(uint64(len(cfg.UnknownFields)))
	for _, name := range []string{"dynamic_unknown_fields", "debug_assertion_failures", "proxy_bug_failures", "proxy_notifications", "wip_protos"} {
		sc.Counter(name)
	}
	sc.Gauge("concurrency").Set(int64(cfg.Options.Concurrency))
	sc.Gauge("hot_restart_epoch").Set(int64(cfg.Options.RestartEpoch))
	if !cfg.Options.DisableHotRestart {
		// Envoy's parent process counts itself as generation 1; there is no
		// parent to merge a higher generation from.
		sc.Gauge("hot_restart_generation").Set(1)
	}
	sc.Gauge("version").Set(int64(serverVersion(cfg.Bootstrap.GetStatsServerVersionOverride().GetValue(),
		cfg.Bootstrap.GetStatsServerVersionOverride() != nil, options.BuildVersion())))
	fips := int64(0)
	if fips140.Enabled() {
		fips = 1
	}
	sc.Gauge("compilation_settings.fips_mode").Set(fips)
	sr.server.parentConnections.Set(0)
	sr.server.daysUntilCert.Set(0)
	s.refreshServerStats()

	sinks, err := s.buildSinks(cfg.Bootstrap.GetStatsSinks())
	if err != nil {
		errs = append(errs, err)
	}
	sr.flusher = stats.NewFlusher(s.stats, sinks, stats.FlusherOptions{
		Interval: cfg.Bootstrap.GetStatsFlushInterval().AsDuration(),
		OnAdmin:  cfg.Bootstrap.GetStatsFlushOnAdmin(),
		Now:      s.now,
		Log:      s.logs.Logger("stats"),
		Dropped:  sr.server.droppedFlushes,
	})
	sr.flusher.AddHook(s.refreshServerStats)
	return errors.Join(errs...)
}

// serverVersion is the server.version gauge: the bootstrap's
// stats_server_version_override when set, else the first six hex digits
// of the source revision as a number (0 for a build without one).
func serverVersion(override uint64, overridden bool, buildVersion string) uint64 {
	if overridden {
		return override
	}
	revision, _, _ := strings.Cut(buildVersion, "/")
	if len(revision) < 6 {
		return 0
	}
	v, err := strconv.ParseUint(revision[:6], 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// refreshServerStats updates the server gauges that change, at the start
// of every flush (Envoy's updateServerStats).
func (s *Server) refreshServerStats() {
	sr := s.statsRT
	ss := &sr.server
	ss.uptime.Set(int64(s.now().Sub(s.start) / time.Second))
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	// The same figures as /memory (see docs/compat.md).
	ss.memoryAllocated.Set(int64(m.HeapAlloc))
	ss.memoryHeapSize.Set(int64(m.HeapSys))
	ss.memoryPhysicalSize.Set(int64(m.Sys - m.HeapReleased))
	_, total, _ := s.stats.RecentLookups()
	ss.recentLookups.Set(int64(total))
	sr.mu.Lock()
	var conns int64
	for _, fn := range sr.connSources {
		conns += fn()
	}
	sr.mu.Unlock()
	ss.totalConnections.Set(conns)
	ss.daysUntilCert.Set(s.daysUntilFirstCertExpiring())
	if secs, ok := s.secondsUntilFirstOCSPExpiring(); ok {
		ss.secondsUntilOCSP.Set(secs)
	}
}

// AddConnectionSource registers fn, which reports the active downstream
// connections of one listener; server.total_connections is the sum of
// every source at each flush. The admin listener is not counted, as in
// Envoy.
func (s *Server) AddConnectionSource(fn func() int64) {
	s.statsRT.mu.Lock()
	defer s.statsRT.mu.Unlock()
	s.statsRT.connSources = append(s.statsRT.connSources, fn)
}

// Store returns the server's stat store (admin.StatsSource).
func (s *Server) Store() *stats.Store { return s.stats }

// FlushForAdmin flushes the stats, sinks included, when the bootstrap sets
// stats_flush_on_admin, and does nothing otherwise; the stats endpoints
// call it before rendering.
func (s *Server) FlushForAdmin() {
	if s.statsRT.flusher.OnAdmin() {
		_ = s.statsRT.flusher.Flush() // sink errors are logged by the flusher
	}
}

// FilterUsesRE2 reports whether /stats?filter= uses RE2: the runtime key
// proxy.reloadable_features.admin_stats_filter_use_re2, true unless set
// to false.
func (s *Server) FilterUsesRE2() bool {
	return s.runtime.Snapshot().Bool(FilterRE2RuntimeKey, true)
}

// StatsFlushInterval returns the bootstrap's stats_flush_interval (5 s by
// default).
func (s *Server) StatsFlushInterval() time.Duration { return s.statsRT.flusher.Interval() }

// startStats records the initialization time and starts the flush timer
// and the main-thread watchdog. shutdown stops them.
func (s *Server) startStats() {
	sr := s.statsRT
	sr.server.initializationTime.Record(uint64(max(s.now().Sub(s.start).Milliseconds(), 0)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = sr.flusher.Run(ctx) })
	wdc := watchdogConfigOf(s.boot)
	wg.Go(func() { runWatchdog(ctx, wdc, sr.server.watchdogMiss, sr.server.watchdogMegaMiss) })
	sr.mu.Lock()
	sr.stop = func() {
		cancel()
		wg.Wait()
	}
	sr.mu.Unlock()
}

// stopStats stops the timer, runs a last flush (as Envoy does on
// shutdown, unless stats are flushed on admin requests only) so that sinks
// get the final counts, and closes the sinks: open dashboard streams end.
// It is safe to call when startStats was not.
func (s *Server) stopStats() {
	sr := s.statsRT
	sr.mu.Lock()
	stop := sr.stop
	sr.stop = nil
	sr.mu.Unlock()
	if stop == nil {
		_ = sr.flusher.Close()
		return
	}
	stop()
	if !sr.flusher.OnAdmin() {
		_ = sr.flusher.Flush()
	}
	if err := sr.flusher.Close(); err != nil {
		s.logs.Logger("stats").Error(err, "closing the stats sinks")
	}
}
