// Package healthcheck is the health_check HTTP filter
// (envoy.filters.http.health_check): it recognises health-check requests
// by their headers and, unless in pass-through mode, answers them itself:
// 200 while the server passes health checks (and its
// cluster_min_healthy_percentages hold), 503 after /healthcheck/fail or
// while draining. In pass-through mode it lets them through to the router,
// except while failing, when it answers 503 too; with cache_time it
// answers from the last passed-through response meanwhile.
package healthcheck

import (
	"errors"
	"fmt"
	"sort"
	"time"

	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.health_check"

// Membership is what cluster_min_healthy_percentages reads of the
// server's clusters: implemented by the server's httpfilter.Services.
type Membership interface {
	// ClusterMembership returns a cluster's host counts (membership_total,
	// membership_healthy and membership_degraded); ok is false when
	// there is no such cluster.
	ClusterMembership(name string) (total, healthy, degraded int64, ok bool)
}

// Factory builds the filter.
type Factory struct{}

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*healthcheckv3.HealthCheck)
	if !ok {
		return nil, errors.New("not a HealthCheck configuration")
	}
	if cfg.GetPassThroughMode() == nil {
		return nil, errors.New("pass_through_mode: must be set")
	}
	match, err := router.CompileHeaderMatch(cfg.GetHeaders())
	if err != nil {
		return nil, err
	}
	f := &filter{passThrough: cfg.GetPassThroughMode().GetValue(), match: match, health: ctx.Health}
	if ct := cfg.GetCacheTime(); ct != nil && f.passThrough {
		// As Envoy, a cache only in pass-through mode: without it the
		// filter answers every health check itself anyway.
		if d := ct.AsDuration(); d > 0 {
			now := ctx.Now
			if now == nil {
				now = time.Now
			}
			f.cache = newResponseCache(d, now)
		}
	}
	if mins := cfg.GetClusterMinHealthyPercentages(); len(mins) > 0 {
		m, ok := ctx.Services.(Membership)
		if !ok {
			return nil, errors.New("cluster_min_healthy_percentages: not available here (no clusters)")
		}
		f.membership = m
		for name, p := range mins {
			v := p.GetValue()
			if v < 0 || v > 100 {
				return nil, fmt.Errorf("cluster_min_healthy_percentages[%q].value: %v is not a percentage", name, v)
			}
			f.minHealthy = append(f.minHealthy, clusterMin{name: name, percent: v})
		}
		// Envoy walks its map in no set order; a fixed one gives each
		// request the same details.
		sort.Slice(f.minHealthy, func(i, j int) bool { return f.minHealthy[i].name < f.minHealthy[j].name })
	}
	return f, nil
}

// clusterMin is one entry of cluster_min_healthy_percentages.
type clusterMin struct {
	name    string
	percent float64
}

// filter is both the compiled configuration and the filter of every
// request: what a request needs remembered lives in its stream state.
type filter struct {
	passThrough bool
	// match is the filter's headers, matched by the router's header
	// matching so that health checks match exactly as routes do (":path"
	// included).
	match      router.HeaderMatch
	health     httpfilter.HealthState
	cache      *responseCache // cache_time, pass-through mode only
	membership Membership
	minHealthy []clusterMin
}

// streamKey keys a health check's state in its stream.
type streamKey struct{}

// checkState is what a health check remembers between its request and
// its response: that it is one, and whether its local answer is degraded.
type checkState struct {
	degraded bool
}

// NewFilter implements httpfilter.Config.
func (f *filter) NewFilter() httpfilter.Filter { return f }

// DecodeHeaders implements httpfilter.Decoder. The server's state is read
// only for health-check requests; a nil health never fails.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if !f.match.Matches(s.Request()) {
		return httpfilter.Continue
	}
	s.MarkHealthCheck()
	st := s.StreamState(streamKey{}, func() any { return &checkState{} }).(*checkState)
	switch {
	case f.health != nil && f.health.HealthChecksFailed():
		s.SendLocalReply(503, "", accesslog.FailedLocalHealthCheck, "health_check_failed")
		return httpfilter.Stop
	case f.cache != nil:
		status, degraded, ok := f.cache.get()
		if !ok {
			return httpfilter.Continue
		}
		st.degraded = degraded
		f.reply(s, status, "health_check_cached")
		return httpfilter.Stop
	case f.passThrough:
		return httpfilter.Continue
	}
	status, details := f.clustersStatus()
	f.reply(s, status, details)
	return httpfilter.Stop
}

// reply answers a health check; a status other than 2xx fails it
// (FailedLocalHealthCheck), as in Envoy.
func (f *filter) reply(s httpfilter.Stream, status int, details string) {
	var flags accesslog.ResponseFlags
	if status < 200 || status > 299 {
		flags = accesslog.FailedLocalHealthCheck
	}
	s.SendLocalReply(status, "", flags, details)
}

// clustersStatus is the answer cluster_min_healthy_percentages gives: 503
// when a cluster is missing, empty (unless its minimum is 0) or below its
// share of healthy and degraded hosts; 200 otherwise.
func (f *filter) clustersStatus() (int, string) {
	if len(f.minHealthy) == 0 {
		return 200, "health_check_ok"
	}
	for _, c := range f.minHealthy {
		total, healthy, degraded, ok := f.membership.ClusterMembership(c.name)
		switch {
		case !ok:
			return 503, "health_check_failed_no_cluster_found"
		case total == 0 && c.percent == 0:
			continue
		case total == 0:
			return 503, "health_check_failed_cluster_empty"
		case 100*float64(healthy+degraded) < float64(total)*c.percent:
			return 503, "health_check_failed_cluster_unhealthy"
		}
	}
	return 200, "health_check_ok_cluster_healthy"
}

// EncodeHeaders implements httpfilter.Encoder: a passed-through health
// check's response fills the cache; a cached degraded answer says so.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.cache == nil {
		return httpfilter.Continue
	}
	st, ok := s.StreamState(streamKey{}, func() any { return nil }).(*checkState)
	if !ok {
		return httpfilter.Continue
	}
	h := s.ResponseHeaders()
	if st.degraded {
		h.Set("x-envoy-degraded", "")
		return httpfilter.Continue
	}
	_, degraded := h.Get("x-envoy-degraded")
	f.cache.set(s.ResponseStatus(), degraded)
	return httpfilter.Continue
}
