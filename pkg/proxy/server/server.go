// Package server is the proxy's composition root. It owns every part of a
// running proxy (runtime, stats, logs, listeners, the admin listener), moves
// the server through its lifecycle states, and implements the interfaces the
// admin package declares. It builds everything in New, so --mode validate
// checks a configuration completely without binding a port.
package server

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/overload"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// DefaultProfilePath is where the profilers write when the bootstrap's
// admin.profile_path is empty.
const DefaultProfilePath = "/var/log/proxy/proxy.prof"

// Config is everything a server is built from.
type Config struct {
	Options       *options.Options
	Bootstrap     *bootstrapv3.Bootstrap
	UnknownFields []string // unknown static fields that were allowed and dropped
	Extensions    *extension.Registry
	Logs          *logging.Registry
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HostRoot is the directory standing for "/" where the overload
	// manager's cgroup and CPU monitors read /proc and /sys/fs/cgroup;
	// "" means "/" (see HostRootEnv).
	HostRoot string
}

// HostRootEnv names the environment variable cmd/sidecar reads into
// Config.HostRoot, so that tests of the built binary can give its resource
// monitors a fake cgroup and /proc/stat. Envoy has no such setting: unset,
// the monitors read the real files as Envoy's do.
const HostRootEnv = "OUTRIGGER_HOST_ROOT"

// Server is one proxy instance.
type Server struct {
	opts *options.Options
	boot *bootstrapv3.Bootstrap
	ext  *extension.Registry
	// taps holds the tap filters configured with admin_config and the
	// attached /tap session.
	taps tap.Registry
	// luaVMs are the Lua states configurations share by shared_vm_id,
	// held while a configuration uses them.
	luaVMs luavm.Registry
	logs   *logging.Registry
	log    logr.Logger // the "main" logger
	now    func() time.Time
	// clock is Config.Now as given: nil in production. The connection
	// managers get it rather than now, because with nil they read the
	// time once per request where a func value would cost extra reads.
	clock func() time.Time
	start time.Time
	// hostRoot is Config.HostRoot.
	hostRoot string
	// localAddress is the server's own address as Envoy's local_info
	// finds it, sent in x-forwarded-for by envoy_grpc calls.
	localAddress string

	stats   *stats.Store
	hot     *hotRestart   // hot-restart channel (hotrestart.go)
	statsRT *statsRuntime // flusher, sinks, server and admin stats (stats.go)
	runtime *runtime.Runtime
	life    *lifecycle

	overload *overload.Manager // built before the listeners, which consult it (overload.go)
	clusters *cluster.Manager  // built before the listeners, whose routes use it
	// outlierEvents is cluster_manager.outlier_detection's event log,
	// nil for none.
	outlierEvents *outlier.EventLog
	lset          listenerSet // the listeners, static and discovered (listener_set.go)
	// internal is the bootstrap's internal_listener extension
	// (internal_listeners.go).
	internal    internalListeners
	lds         discoverySource       // listeners from a file; nil without one
	ads         *adsClient            // the ADS stream; nil without dynamic_resources.ads_config
	loadReports *loadReporter         // cluster_manager.load_stats_config's reporter; nil without
	streams     discoveryStreams      // the config sources' own gRPC streams (config_sources.go)
	ldsStream   *adsClient            // lds_config's own stream, added to streams once subscribed; nil without
	eds         *endpointDiscovery    // the EDS clusters' endpoints over ADS; nil without EDS clusters
	cds         clusterSource         // the clusters' subscription; nil without cds_config
	cdsFile     *xds.FileSubscription // cds's file, when the clusters come from one
	rds         *routeDiscovery       // the connection managers' routes over ADS
	secrets     *secretStore          // static secrets and secrets from files (secrets.go)
	// shared holds what network filters share across filter chains and
	// listeners (local_ratelimit's share_key buckets).
	shared *netfilter.Shared
	// ldsReady is closed once the first ADS listener response (or its
	// initial fetch timeout) is in; nil when there is nothing to wait for.
	ldsReady <-chan struct{}
	// rtdsReady is closed once every RTDS layer has had its first
	// response (or its initial fetch timeout); see subscribeRuntime.
	rtdsReady <-chan struct{}

	// odcds discovers clusters on demand over a delta ADS stream; made
	// on first use (odcds.go).
	odcds     *onDemandClusters
	odcdsOnce sync.Once

	// Access logs, the admin's and the listeners', reopened with the
	// application log and closed (flushed) at shutdown. Listeners from
	// discovery open theirs while the server runs, hence the lock.
	logMu      sync.Mutex
	accessLogs []*logging.FileWriter
	// adminLog records admin requests; nil without admin access logs.
	adminLog accesslog.Sink
	// adminCfg is the admin listener's allow_paths, socket_options and
	// ignore_global_conn_limit (admin_config.go).
	adminCfg adminConfig

	quitOnce sync.Once
	quit     chan struct{}

	// deprecated finds the deprecated fields of discovered resources,
	// knowing by now which types can hold one.
	deprecated bootstrap.DeprecatedScanner
}

// New builds a server from a validated bootstrap without binding anything.
// Errors name the configuration path they concern.
func New(cfg Config) (*Server, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	store, storeErr := newStatsStore(cfg.Bootstrap.GetStatsConfig(), cfg.Options.StatsTags)
	s := &Server{
		opts:     cfg.Options,
		boot:     cfg.Bootstrap,
		ext:      cfg.Extensions,
		logs:     cfg.Logs,
		log:      cfg.Logs.Logger("main"),
		now:      now,
		clock:    cfg.Now,
		start:    now(),
		hostRoot: cfg.HostRoot,
		stats:    store,

		localAddress: grpcservice.LocalAddress(),
		shared:       netfilter.NewShared(),
		quit:         make(chan struct{}),
	}
	s.life = newLifecycle(s.stats.Scope("server."))

	errs := []error{storeErr}
	rt, err := runtime.New(cfg.Bootstrap.GetLayeredRuntime(), runtime.Options{ServiceCluster: cfg.Bootstrap.GetNode().GetCluster()})
	if err != nil {
		errs = append(errs, err)
	}
	s.runtime = rt
	errs = append(errs, s.newOverload(cfg.Bootstrap.GetOverloadManager()))
	resolver, rerrs := dns.ForBootstrap(cfg.Bootstrap, cfg.Extensions)
	for _, err := range rerrs {
		if ce, ok := err.(*dns.ConfigError); ok {
			err = &bootstrap.FieldError{Path: ce.Path, Reason: ce.Reason}
		}
		errs = append(errs, err)
	}
	var snapshot func() *runtime.Snapshot
	if rt != nil {
		snapshot = rt.Snapshot
	}
	secrets, err := s.newSecretStore(cfg.Bootstrap.GetStaticResources().GetSecrets())
	errs = append(errs, err)
	s.secrets = secrets
	s.outlierEvents, err = openOutlierEvents(cfg.Bootstrap)
	errs = append(errs, err)
	s.internal = internalListenersOf(cfg.Bootstrap)
	clusters, err := cluster.NewManager(cfg.Bootstrap.GetStaticResources().GetClusters(), cluster.Options{
		Internal:      s.dialInternal,
		OutlierEvents: s.outlierEvents,
		Secrets:       secrets.resolve,
		KeyLog:        s.openKeyLog,
		Stats:         s.stats,
		Runtime:       snapshot,
		Now:           now,
		Extensions:    cfg.Extensions,
		Resolver:      resolver,
		// Envoy's DNS caches take the bootstrap's resolver only when it
		// is a typed one.
		ResolverUntyped: cfg.Bootstrap.GetTypedDnsResolverConfig().GetTypedConfig().GetTypeUrl() == "",
		ResolverEnv:     dns.Env{Log: cfg.Logs.Logger("dns")},
		Log:             cfg.Logs.Logger("upstream"),

		Locality:         nodeLocality(cfg.Bootstrap.GetNode()),
		LocalClusterName: cfg.Bootstrap.GetClusterManager().GetLocalClusterName(),
		DefaultBind:      cfg.Bootstrap.GetClusterManager().GetUpstreamBindConfig(),
		Taps:             &s.taps,
	})
	errs = append(errs, err)
	s.clusters = clusters
	// The ADS stream first: listeners whose routes come from it
	// subscribe as they are built.
	s.ads, err = s.newADS(cfg.Bootstrap.GetDynamicResources())
	errs = append(errs, err)
	// The static clusters' secrets over gRPC subscribe now that the
	// streams' clusters exist; later ones subscribe as they come.
	errs = append(errs, secrets.connect())
	s.rds = &routeDiscovery{s: s, byName: map[string]*rdsRoute{}}
	s.lset.stats = listener.NewManagerStats(s.stats)
	listeners, err := s.buildListeners(cfg.Bootstrap.GetStaticResources().GetListeners(), s.lset.stats)
	errs = append(errs, err)
	s.lset.active = listeners
	for range listeners {
		s.lset.stats.ListenerAdded.Inc()
		s.lset.stats.TotalListenersActive.Inc()
	}
	errs = append(errs, s.initStats(cfg))
	s.adminLog, err = s.buildAdminAccessLog()
	errs = append(errs, err)
	s.adminCfg, err = compileAdminConfig(cfg.Bootstrap.GetAdmin())
	errs = append(errs, err)
	s.eds, err = s.newEndpointDiscovery(cfg.Bootstrap)
	errs = append(errs, err)
	errs = append(errs, s.subscribeRuntime())
	errs = append(errs, s.subscribeClustersADS())
	s.loadReports, err = s.newLoadReporter(cfg.Bootstrap.GetClusterManager())
	errs = append(errs, err)
	if lds, err := s.newListenerDiscovery(cfg.Bootstrap.GetDynamicResources()); err != nil {
		errs = append(errs, err)
	} else if lds != nil {
		s.lds = lds
	}
	if err := errors.Join(errs...); err != nil {
		secrets.close()
		s.streams.close()
		_ = s.loadReports.Close()
		if s.ldsStream != nil {
			_ = s.ldsStream.Close()
		}
		return nil, err
	}

	for _, path := range cfg.UnknownFields {
		logging.Warning(s.log, "unknown field in the static configuration was ignored", "field", path)
	}
	s.warnDeprecated(bootstrap.Deprecated(cfg.Bootstrap))
	return s, nil
}

// HotRestartVersion returns the opaque hot-restart compatibility version.
func (s *Server) HotRestartVersion() string { return s.opts.HotRestartVersion() }

// ProfilePath returns where /cpuprofiler and /heapprofiler write.
func (s *Server) ProfilePath() string {
	if p := s.boot.GetAdmin().GetProfilePath(); p != "" {
		return p
	}
	return DefaultProfilePath
}

// AdminLogger returns the logger the admin endpoints log through.
func (s *Server) AdminLogger() logr.Logger { return s.logs.Logger("admin") }

// AdminAccessLog returns the admin's access loggers, nil when none is
// configured.
func (s *Server) AdminAccessLog() accesslog.Sink { return s.adminLog }

// buildAdminAccessLog compiles the admin's access loggers: access_log_path
// (Envoy's default format) and admin.access_log, with their formats,
// filters and sinks. It returns nil when none is configured.
func (s *Server) buildAdminAccessLog() (accesslog.Sink, error) {
	list, err := loggers.Compile("admin.access_log", s.boot.GetAdmin().GetAccessLog(), loggers.Context{
		Registry: s.ext,
		ByName:   extension.LookupByName(runtimeValues{s.runtime}),
		Sink:     s.accessLogContext(),
		Filter:   logfilter.Context{Runtime: runtimeValues{s.runtime}},
	})
	if err != nil {
		return nil, err
	}
	// access_log_path is deprecated in the v3 API but is the spec's way to
	// configure the admin access log, so it stays supported.
	//lint:ignore SA1019 the spec names admin.access_log_path
	if p := s.boot.GetAdmin().GetAccessLogPath(); p != "" {
		w, err := s.openAccessLog(accesslog.File, p)
		if err != nil {
			return nil, fmt.Errorf("admin.access_log_path: %w", err)
		}
		list.Add(accesslog.LineSink{Format: accesslog.Default(), W: w})
	}
	if list.Empty() {
		return nil, nil
	}
	return &list, nil
}

// The paths that name the standard streams: the stdout and stderr access
// loggers write there, and a file logger naming them shares their writer
// (never reopened nor closed).
const (
	stdoutPath = "/dev/stdout"
	stderrPath = "/dev/stderr"
)

// sharedLogFile opens an access log file, buffered and flushed every
// --file-flush-interval-msec, and keeps it for ReopenLogs and shutdown.
// Loggers naming the same file, the admin's and the listeners', share one
// writer, so that their lines never interleave mid-line.
func (s *Server) sharedLogFile(path string) (*logging.FileWriter, error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	for _, fw := range s.accessLogs {
		if fw.Path() == path {
			return fw, nil
		}
	}
	var (
		fw  *logging.FileWriter
		err error
	)
	switch path {
	case stdoutPath:
		fw, err = logging.OpenStream(path, os.Stdout, s.opts.FileFlushInterval, int(s.opts.FileFlushMinSizeKB)*1024)
	case stderrPath:
		fw, err = logging.OpenStream(path, os.Stderr, s.opts.FileFlushInterval, int(s.opts.FileFlushMinSizeKB)*1024)
	default:
		fw, err = logging.OpenFile(path, s.opts.FileFlushInterval, int(s.opts.FileFlushMinSizeKB)*1024)
	}
	if err != nil {
		return nil, err
	}
	s.accessLogs = append(s.accessLogs, fw)
	return fw, nil
}

// openAccessLogs returns the access logs opened so far.
func (s *Server) openAccessLogs() []*logging.FileWriter {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return slices.Clone(s.accessLogs)
}

// Quit starts a clean shutdown; Run returns soon after. It implements
// admin.Quitter.
func (s *Server) Quit() {
	s.quitOnce.Do(func() { close(s.quit) })
}

// FailHealthChecks implements admin.HealthControl.
func (s *Server) FailHealthChecks() { s.life.setHealthFailed(true) }

// PassHealthChecks implements admin.HealthControl.
func (s *Server) PassHealthChecks() { s.life.setHealthFailed(false) }

// State implements admin.ServerInfoSource.
func (s *Server) State() adminv3.ServerInfo_State { return s.life.state() }
