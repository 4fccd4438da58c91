package httpconn

import (
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// routeResolutionStats are record_route_resolution_stats' two histograms,
// recorded once per stream; nil without the field, so that the default
// stat set is unchanged.
type routeResolutionStats struct {
	// timeUs is the wall time the stream spent resolving its route, all
	// resolutions together.
	timeUs *stats.Histogram
	// count is the number of resolutions: the first, then one after each
	// clear of the route cache (a filter's, an internal redirect's).
	count *stats.Histogram
}

// newRouteResolutionStats makes the histograms under the connection
// manager's prefix.
func newRouteResolutionStats(st *stats.Store, prefix string) *routeResolutionStats {
	sc := st.Scope("http." + prefix + ".")
	return &routeResolutionStats{
		timeUs: sc.Histogram("downstream_rq_route_resolution_time_us", stats.UnitMicroseconds),
		count:  sc.Histogram("downstream_rq_route_resolutions", stats.UnitUnspecified),
	}
}

// routeResolution tracks one stream's route resolutions.
type routeResolution struct {
	elapsed time.Duration
	count   uint64
}

// timeRouteResolution returns the time a resolution starts when the
// stats are kept, the zero time otherwise (no clock read).
func (s *stream) timeRouteResolution() time.Time {
	if s.m.routeResolution == nil {
		return time.Time{}
	}
	return time.Now()
}

// routeResolved counts a resolution that started at t0 (see
// timeRouteResolution).
func (s *stream) routeResolved(t0 time.Time) {
	if t0.IsZero() {
		return
	}
	s.resolution.elapsed += time.Since(t0)
	s.resolution.count++
}

// recordRouteResolution records the stream's resolutions when it ends.
func (s *stream) recordRouteResolution() {
	rs := s.m.routeResolution
	if rs == nil {
		return
	}
	rs.timeUs.Record(uint64(s.resolution.elapsed.Microseconds()))
	rs.count.Record(s.resolution.count)
	s.resolution = routeResolution{}
}
