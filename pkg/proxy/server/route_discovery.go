package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// routeTypeURL is the type of the route configurations RDS sends.
const routeTypeURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

// routeDiscovery feeds the connection managers whose routes come from
// RDS over the ADS stream (rds: {config_source: {ads: {}}}), as Envoy's
// RdsRouteConfigSubscription: one subscription on the stream names every
// route configuration wanted; each configuration that arrives is compiled
// for every manager that uses it and swapped in; a name is ready (its
// listeners stop warming) once its first configuration is in, or its
// initial fetch timed out.
type routeDiscovery struct {
	s   *Server
	sub *xds.ADSSubscription // nil until a name is wanted

	// mu guards what follows, changed on the stream goroutine (apply) and
	// by listener builds (register, release).
	mu     sync.Mutex
	byName map[string]*rdsRoute
}

// rdsRoute is one route configuration name with the managers using it.
type rdsRoute struct {
	name     string
	managers map[*httpconn.Manager]struct{}
	stats    rdsStats

	// stream is the name's own stream (rds.config_source with an
	// api_config_source), nil on the ADS stream.
	stream *adsClient

	config      *routev3.RouteConfiguration // the last accepted, nil before
	version     string
	lastUpdated time.Time

	ready     chan struct{}
	readyOnce sync.Once
}

// rdsStats are Envoy's http.<stat_prefix>.rds.<route_config_name>.* stats
// (the prefix of the first connection manager that asked for the name).
type rdsStats struct {
	attempt, success, rejected, failure, empty, initFetchTimeout, reload *stats.Counter
	version, updateTime, reloadTime                                      *stats.Gauge
	versionText                                                          *stats.TextReadout
}

func (r *rdsRoute) markReady() { r.readyOnce.Do(func() { close(r.ready) }) }

// register makes m use the route configuration rds names, and adds its
// readiness to w. A configuration already received is compiled for m at
// once (then m is ready, as Envoy's RDS provider shares the
// configuration of a name between its managers); otherwise the name is
// subscribed to. Errors are relative to the connection manager.
func (d *routeDiscovery) register(m *httpconn.Manager, rds *hcmv3.Rds, statPrefix string, w *listenerWarming) error {
	api := rds.GetConfigSource().GetApiConfigSource()
	if d == nil || (d.s.ads == nil && api == nil) {
		return d.s.noADS("rds.config_source.ads")
	}
	name := rds.GetRouteConfigName()
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.byName[name]
	if r == nil {
		sc := d.s.stats.Scope("http." + statPrefix + ".rds." + name + ".")
		r = &rdsRoute{name: name, managers: map[*httpconn.Manager]struct{}{}, ready: make(chan struct{}), stats: rdsStats{
			attempt:          sc.Counter("update_attempt"),
			success:          sc.Counter("update_success"),
			rejected:         sc.Counter("update_rejected"),
			failure:          sc.Counter("update_failure"),
			empty:            sc.Counter("update_empty"),
			initFetchTimeout: sc.Counter("init_fetch_timeout"),
			reload:           sc.Counter("config_reload"),
			version:          sc.Gauge("version"),
			updateTime:       sc.Gauge("update_time"),
			reloadTime:       sc.Gauge("config_reload_time_ms"),
			versionText:      sc.TextReadout("version_text"),
		}}
		r.stats.attempt.Inc() // the subscription's start, as Envoy counts it
		timeout := xds.DefaultInitialFetchTimeout
		if t := rds.GetConfigSource().GetInitialFetchTimeout(); t != nil {
			timeout = t.AsDuration()
		}
		if timeout > 0 {
			log := d.s.logs.Logger("upstream")
			time.AfterFunc(timeout, func() {
				select {
				case <-r.ready:
				default:
					r.stats.initFetchTimeout.Inc()
					r.stats.attempt.Inc()
					logging.Warning(log, "rds: initial fetch timed out; the listener starts without routes", "route_config_name", name)
					r.markReady()
				}
			})
		}
		d.byName[name] = r
		if api != nil {
			// A stream of its own to the route discovery service, as
			// Envoy's RDS subscription with an api_config_source.
			if err := d.ownStreamLocked(r, api); err != nil {
				delete(d.byName, name)
				return fieldpath.Prefix("rds.config_source.api_config_source.", err)
			}
		} else if err := d.wantLocked(); err != nil {
			delete(d.byName, name)
			return err
		}
	}
	if r.config != nil {
		compiled, err := m.CompileRoutes(r.config)
		if err != nil {
			return fieldpath.Prefix("rds: route configuration "+name+": ", err)
		}
		m.SetRoutes(compiled)
	}
	r.managers[m] = struct{}{}
	w.add(initTarget{name: "RdsRouteConfigSubscription init " + name, ready: r.ready})
	w.release = append(w.release, func() { d.release(name, m) })
	return nil
}

// release forgets a manager that closed. A name no manager uses any more
// is no longer asked for (unless it is the last: an empty list would
// subscribe to every route configuration).
func (d *routeDiscovery) release(name string, m *httpconn.Manager) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.byName[name]
	if r == nil {
		return
	}
	delete(r.managers, m)
	if len(r.managers) > 0 {
		return
	}
	delete(d.byName, name)
	r.markReady()
	if r.stream != nil {
		// Closed once d.mu is released: the stream may be applying a
		// response, which takes d.mu.
		go d.s.streams.remove(r.stream)
		return
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(d.byName)), func(o *rdsRoute) bool { return o.stream == nil }) {
		_ = d.wantLocked()
	}
}

// ownStreamLocked opens r's own stream to api's route discovery service,
// asking for r's name only. d.mu is held.
func (d *routeDiscovery) ownStreamLocked(r *rdsRoute, api *corev3.ApiConfigSource) error {
	c, err := d.s.newGRPCStream(api, routeTypeURL)
	if err != nil {
		return err
	}
	// The name keeps its own stats, as on the ADS stream.
	if _, err := c.Subscribe(xds.SubscriptionOptions{
		TypeURL:       routeTypeURL,
		Stats:         stats.NewStore().Scope(""),
		ResourceNames: []string{r.name},
		OnStreamFailure: func() {
			r.stats.failure.Inc()
			r.stats.attempt.Inc()
		},
	}, d.apply); err != nil {
		_ = c.Close()
		return err
	}
	r.stream = c
	return d.s.streams.add(c)
}

// wantLocked asks for the names in use: subscribing on the first, changing
// the names later. d.mu is held.
func (d *routeDiscovery) wantLocked() error {
	names := make([]string, 0, len(d.byName))
	for name, r := range d.byName {
		if r.stream == nil { // the names on streams of their own are not asked for here
			names = append(names, name)
		}
	}
	if d.sub != nil {
		d.sub.SetResourceNames(names)
		return nil
	}
	// The names keep their own stats; the subscription's would only
	// repeat them under a name Envoy does not have.
	sub, err := d.s.ads.Subscribe(xds.SubscriptionOptions{
		TypeURL:       routeTypeURL,
		Stats:         stats.NewStore().Scope(""),
		ResourceNames: names,
		OnStreamFailure: func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			for _, r := range d.byName {
				r.stats.failure.Inc()
				r.stats.attempt.Inc()
			}
		},
	}, d.apply)
	if err != nil {
		return err
	}
	d.sub = sub
	return nil
}

// apply applies one response: every configuration is compiled for every
// manager using its name before any is swapped in, so a response with
// one bad configuration is rejected whole (NACKed with its path) and the
// routes in service stay. A name the response leaves out is unchanged.
func (d *routeDiscovery) apply(u xds.Update) error {
	d.s.warnDeprecatedResources(u)
	start := d.s.now()
	type change struct {
		r        *rdsRoute
		rc       *routev3.RouteConfiguration
		version  string // its own over delta xDS
		compiled map[*httpconn.Manager]httpconn.CompiledRoutes
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var (
		changes []change
		errs    []error
	)
	for i, res := range u.Resources {
		rc, ok := res.(*routev3.RouteConfiguration)
		if !ok {
			return fmt.Errorf("resources[%d]: not a RouteConfiguration", i)
		}
		r := d.byName[rc.GetName()]
		if r == nil {
			continue
		}
		// validate_clusters is off for RDS unless the configuration turns
		// it on, as in Envoy; then the first unknown cluster rejects it.
		if cerrs := router.ValidateClusters(rc, false, d.s.clusterExists); len(cerrs) > 0 {
			errs = append(errs, fmt.Errorf("resources[%d].%w", i, cerrs[0]))
			continue
		}
		ch := change{r: r, rc: rc, version: u.VersionOf(i), compiled: map[*httpconn.Manager]httpconn.CompiledRoutes{}}
		for m := range r.managers {
			compiled, err := m.CompileRoutes(rc)
			if err != nil {
				errs = append(errs, fieldpath.Prefix("resources["+strconv.Itoa(i)+"].", err))
				break
			}
			ch.compiled[m] = compiled
		}
		changes = append(changes, ch)
	}
	for _, ch := range changes {
		ch.r.stats.attempt.Inc()
	}
	if err := errors.Join(errs...); err != nil {
		for _, ch := range changes {
			ch.r.stats.rejected.Inc()
			// What compiled holds per-route filter resources too.
			for _, compiled := range ch.compiled {
				compiled.Discard()
			}
		}
		return err
	}
	now := d.s.now()
	for _, ch := range changes {
		for m, compiled := range ch.compiled {
			m.SetRoutes(compiled)
		}
		r := ch.r
		r.config, r.version, r.lastUpdated = proto.CloneOf(ch.rc), ch.version, now
		st := r.stats
		st.success.Inc()
		st.reload.Inc()
		if len(ch.rc.GetVirtualHosts()) == 0 {
			st.empty.Inc()
		}
		st.updateTime.Set(now.UnixMilli())
		st.reloadTime.Set(now.UnixMilli())
		st.version.Set(int64(xxhash.Sum64String(ch.version)))
		st.versionText.Set(ch.version)
		r.markReady()
		d.s.logs.Logger("upstream").V(1).Info("rds: routes updated", "route_config_name", r.name, "version", ch.version, "took", now.Sub(start).String())
	}
	return nil
}

// dump lists the route configurations received, for /config_dump's
// dynamic_route_configs, by name.
func (d *routeDiscovery) dump() []*adminv3.RoutesConfigDump_DynamicRouteConfig {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.byName))
	for name, r := range d.byName {
		if r.config != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []*adminv3.RoutesConfigDump_DynamicRouteConfig
	for _, name := range names {
		r := d.byName[name]
		out = append(out, &adminv3.RoutesConfigDump_DynamicRouteConfig{
			VersionInfo: r.version,
			RouteConfig: pack(r.config),
			LastUpdated: timestamppb.New(r.lastUpdated.Truncate(time.Millisecond)),
		})
	}
	return out
}
