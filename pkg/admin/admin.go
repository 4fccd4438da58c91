package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// defaultProfilePath is where the profilers write when the bootstrap's
// admin.profile_path is empty (Envoy's /var/log/envoy/envoy.prof, renamed).
const defaultProfilePath = "/var/log/proxy/proxy.prof"

// Options wires the admin to the server. Every source is optional: a nil
// source leaves its endpoints out of the route table (and so out of /help
// and the home page), which lets tools and tests build a partial admin.
type Options struct {
	Server  ServerInfoSource // /server_info, /ready
	Health  HealthControl    // /healthcheck/fail, /healthcheck/ok
	Quit    Quitter          // /quitquitquit
	Memory  MemorySource     // /memory
	Certs   CertSource       // /certs
	Runtime RuntimeStore     // /runtime, /runtime_modify
	Logs    LogControl       // /logging, /reopen_logs

	Stats StatsSource // /stats family, /reset_counters
	// PrometheusNaming is the product word of the Prometheus renders'
	// names and labels (--prometheus-naming).
	PrometheusNaming stats.Naming
	Breakers         BreakerEventSource // /breaker_event_stream, /hystrix_event_stream
	ConfigDump       ConfigDumpSource   // /config_dump, /init_dump
	Clusters         ClusterSource      // /clusters
	Listeners        ListenerSource     // /listeners
	Drain            DrainControl       // /drain_listeners
	Tap              TapSource          // /tap

	// HotRestartVersion is the body of /hot_restart_version.
	HotRestartVersion string
	// ProfilePath is the bootstrap's admin.profile_path, where /cpuprofiler
	// and /heapprofiler write; "" means /var/log/proxy/proxy.prof.
	ProfilePath string
	// MutexTracing reports --enable-mutex-tracing; the server has already
	// called runtime.SetMutexProfileFraction, and /contention reports the
	// runtime's mutex profile only when it is set.
	MutexTracing bool
	// AccessLog records every admin request (admin.access_log and
	// access_log_path, with their formats, filters and sinks); nil
	// disables the admin access log. It is called from many requests at
	// once.
	AccessLog accesslog.Sink
	// AllowPath is the bootstrap's admin.allow_paths: a request whose
	// path (with its query) it rejects is answered 403, whatever its
	// path. nil allows every path.
	AllowPath func(pathAndQuery string) bool
	// Log is the "admin" component logger.
	Log logr.Logger
	// Now is the clock of the access log; nil means time.Now.
	Now func() time.Time
}

// Admin is the administration interface: a route table and the state of its
// stateful endpoints (profilers, contention baseline). It is safe for
// concurrent use once built.
type Admin struct {
	opts        Options
	log         logr.Logger
	now         func() time.Time
	profilePath string

	routes []Route           // sorted by path
	byPath map[string]*Route // into routes
	help   string            // the /help text, generated once
	home   []byte            // the home page, generated once
	// dynamic is set when a route has Present: /help and the home page
	// are then generated per request from the routes present.
	dynamic bool
	handler http.Handler // dispatch wrapped in the middleware

	profilers  profilers
	contention contention
}

// New builds the admin from o. It panics only if this package's own route
// table is inconsistent (a duplicated path, a route without handler), which
// its tests rule out.
func New(o Options) *Admin {
	return newAdmin(o, nil)
}

// newAdmin is New with extra routes, which tests use to add endpoints that
// misbehave on purpose.
func newAdmin(o Options, extra []Route) *Admin {
	a := &Admin{
		opts:        o,
		log:         o.Log,
		now:         o.Now,
		profilePath: o.ProfilePath,
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.profilePath == "" {
		a.profilePath = defaultProfilePath
	}
	a.contention.read = readMutexProfile

	routes := slices.Concat(
		a.homeRoutes(),
		a.helpRoutes(),
		a.serverInfoRoutes(),
		a.memoryRoutes(),
		a.certsRoutes(),
		a.lifecycleRoutes(),
		a.runtimeRoutes(),
		a.loggingRoutes(),
		a.profilerRoutes(),
		a.contentionRoutes(),
		a.statsRoutes(),
		a.breakerRoutes(),
		a.configDumpRoutes(),
		a.clustersRoutes(),
		a.listenersRoutes(),
		a.drainRoutes(),
		a.tapRoutes(),
		extra,
	)
	if err := checkRoutes(routes); err != nil {
		panic(fmt.Sprintf("admin: %v", err))
	}
	sortRoutes(routes)
	a.routes = routes
	a.byPath = make(map[string]*Route, len(routes))
	for i := range a.routes {
		a.byPath[a.routes[i].Path] = &a.routes[i]
		a.dynamic = a.dynamic || a.routes[i].Present != nil
	}
	a.help = helpText(a.routes)
	home, err := homePage(a.routes)
	if err != nil {
		panic(fmt.Sprintf("admin: %v", err))
	}
	a.home = home
	a.handler = a.middleware(http.HandlerFunc(a.dispatch))
	return a
}

// present reports whether r exists now.
func (r *Route) present() bool { return r.Present == nil || r.Present() }

// presentRoutes is the route table as it is now: the routes present.
func (a *Admin) presentRoutes() []Route {
	out := make([]Route, 0, len(a.routes))
	for i := range a.routes {
		if a.routes[i].present() {
			out = append(out, a.routes[i])
		}
	}
	return out
}

// helpNow is the /help text of the routes present now.
func (a *Admin) helpNow() string {
	if !a.dynamic {
		return a.help
	}
	return helpText(a.presentRoutes())
}

// homeNow is the home page of the routes present now.
func (a *Admin) homeNow() ([]byte, error) {
	if !a.dynamic {
		return a.home, nil
	}
	return homePage(a.presentRoutes())
}

// Handler returns the whole admin as an http.Handler, middleware included
// (access log, panic recovery, cross-origin protection, common headers).
// Serve it on the admin listener only.
func (a *Admin) Handler() http.Handler { return a.handler }

// Routes returns a copy of the route table, sorted by path.
func (a *Admin) Routes() []Route {
	out := slices.Clone(a.routes)
	for i := range out {
		out[i].Params = slices.Clone(out[i].Params)
		for j := range out[i].Params {
			out[i].Params[j].Values = slices.Clone(out[i].Params[j].Values)
		}
	}
	return out
}

// Close stops the profilers that /cpuprofiler and /heapprofiler left
// running, so that their files are complete when the server exits (a
// profile is only readable once stopped). Call it after the admin listener
// has stopped serving. The admin must not be used afterwards.
func (a *Admin) Close() error {
	err := a.profilers.stopCPU()
	if herr := a.profilers.stopHeap(); herr != nil && !errors.Is(herr, errHeapNotStarted) {
		err = errors.Join(err, herr)
	}
	return err
}
