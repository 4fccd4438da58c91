// Package bandwidthlimit is the bandwidth limit HTTP filter
// (envoy.filters.http.bandwidth_limit): response bodies leave at no more
// than limit_kbps KiB/s, metered by a token bucket (a second's worth of
// bytes, refilled continuously) that every stream of the configuration
// shares, as Envoy's SharedTokenBucketImpl; a stream that finds the bucket
// empty waits fill_interval before asking again. A route's BandwidthLimit
// replaces the whole configuration, with a bucket and stats of its own.
// Stats: <stat_prefix>.http_bandwidth_limit.response_* (Envoy's names).
// Metering request bodies (enable_mode REQUEST, REQUEST_AND_RESPONSE) is
// refused at load.
package bandwidthlimit

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bandwidthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/bandwidth_limit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.bandwidth_limit"

// defaultFillInterval is Envoy's StreamRateLimiter fill interval.
const defaultFillInterval = 50 * time.Millisecond

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*bandwidthv3.BandwidthLimit)
	if !ok {
		return nil, errors.New("not a BandwidthLimit configuration")
	}
	s, err := compileSettings(c, ctx, false)
	if err != nil {
		return nil, err
	}
	return &filterConfig{name: ctx.Name, own: s}, nil
}

// CompileRoute implements httpfilter.RouteFactory: a route's
// BandwidthLimit, whose limit_kbps must be set, as Envoy requires.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*bandwidthv3.BandwidthLimit)
	if !ok {
		return nil, errors.New("not a BandwidthLimit configuration")
	}
	return compileSettings(c, ctx, true)
}

// settings are one level's configuration, with its bucket and stats.
type settings struct {
	meter   bool
	enabled runtime.FeatureFlag
	flags   runtime.BoolReader
	bucket  *bucket
	fill    time.Duration
	// trailers, when not "", are the names of the delay trailers.
	delayTrailer, filterDelayTrailer string
	stats                            *responseStats
}

// responseStats are Envoy's response_* stats.
type responseStats struct {
	enabled, enforced, incomingTotal, allowedTotal *stats.Counter
	pending, incomingSize, allowedSize             *stats.Gauge
	transfer                                       *stats.Histogram
}

// compileSettings compiles a BandwidthLimit.
func compileSettings(c *bandwidthv3.BandwidthLimit, ctx httpfilter.Context, perRoute bool) (*settings, error) {
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if perRoute && c.GetLimitKbps() == nil {
		return nil, errors.New("limit_kbps: limit must be set for per route filter config")
	}
	switch c.GetEnableMode() {
	case bandwidthv3.BandwidthLimit_DISABLED, bandwidthv3.BandwidthLimit_RESPONSE:
	case bandwidthv3.BandwidthLimit_REQUEST, bandwidthv3.BandwidthLimit_REQUEST_AND_RESPONSE:
		return nil, fmt.Errorf("enable_mode: %s is not supported by Outrigger (request bodies are not metered; RESPONSE is)", c.GetEnableMode())
	default:
		return nil, fmt.Errorf("enable_mode: unknown value %d", c.GetEnableMode())
	}
	fill := defaultFillInterval
	if d := c.GetFillInterval(); d != nil {
		// Envoy reads whole milliseconds (20ms to 1s, which the field's
		// constraint checks).
		fill = d.AsDuration().Truncate(time.Millisecond)
	}
	kbps := c.GetLimitKbps().GetValue()
	s := &settings{
		// A limit of 0 (none set at the filter, for routes to set) would
		// hold every body until its timeouts: such a level meters nothing.
		meter:   c.GetEnableMode() == bandwidthv3.BandwidthLimit_RESPONSE && kbps > 0,
		enabled: runtime.FeatureFlagOf(c.GetRuntimeEnabled()),
		fill:    fill,
	}
	s.flags, _ = ctx.Runtime.(runtime.BoolReader)
	if s.meter {
		s.bucket = newBucket(float64(kbps)*1024, time.Now())
	}
	if c.GetEnableResponseTrailers() {
		s.delayTrailer, s.filterDelayTrailer = "bandwidth-response-delay-ms", "bandwidth-response-filter-delay-ms"
		if p := c.GetResponseTrailerPrefix(); p != "" {
			p = strings.ToLower(p) + "-"
			s.delayTrailer, s.filterDelayTrailer = p+s.delayTrailer, p+s.filterDelayTrailer
		}
	}
	sc := ctx.Stats.Scope(c.GetStatPrefix() + ".http_bandwidth_limit.")
	s.stats = &responseStats{
		enabled:       sc.Counter("response_enabled"),
		enforced:      sc.Counter("response_enforced"),
		incomingTotal: sc.Counter("response_incoming_total_size"),
		allowedTotal:  sc.Counter("response_allowed_total_size"),
		pending:       sc.Gauge("response_pending"),
		incomingSize:  sc.Gauge("response_incoming_size"),
		allowedSize:   sc.Gauge("response_allowed_size"),
		transfer:      sc.Histogram("response_transfer_duration", stats.UnitMilliseconds),
	}
	return s, nil
}

// bucket is a token bucket of one byte a token shared by every stream of
// a configuration: it holds a second's worth (the limit) and refills
// continuously at the limit, starting full, as Envoy's
// SharedTokenBucketImpl.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

// newBucket is a full bucket of rate bytes a second.
func newBucket(rate float64, now time.Time) *bucket {
	return &bucket{rate: rate, tokens: rate, last: now}
}

// take refills the bucket for the time since it last did and gives what
// it holds, up to n whole tokens.
func (b *bucket) take(n int, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.rate, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
	k := min(float64(n), float64(int64(b.tokens)))
	b.tokens -= k
	return int(k)
}

// filterConfig is the compiled filter.
type filterConfig struct {
	name string
	own  *settings
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{c: c} }

// filter is one request's filter.
type filter struct {
	c *filterConfig
	t *throttle
}

var (
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// EncodeHeaders implements httpfilter.Encoder: Envoy's encodeHeaders,
// which meters the body when the level's mode and runtime flag say so.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	st := f.c.own
	if rs, ok := s.RouteConfig(f.c.name).(*settings); ok {
		st = rs
	}
	if !st.meter || !st.enabled.Enabled(st.flags) {
		return httpfilter.Continue
	}
	st.stats.enabled.Inc()
	if _, has := s.ResponseBody(); !has {
		return httpfilter.Continue
	}
	f.t = &throttle{s: st}
	s.TransformResponseBody(f.t)
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: a body cut off before its
// end is no longer pending.
func (f *filter) OnDestroy() {
	if f.t != nil {
		f.t.finish(time.Now())
	}
}
