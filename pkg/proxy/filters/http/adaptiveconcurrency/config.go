// Package adaptiveconcurrency is the HTTP filter
// envoy.filters.http.adaptive_concurrency with Envoy's gradient
// controller: it limits the requests in flight to a concurrency limit it
// keeps adjusting from the latencies it measures, as Envoy's filter does.
// Periodically it measures the ideal latency (minRTT) while holding the
// limit at min_concurrency; between those windows, every
// concurrency_update_interval, it compares a percentile of the sampled
// latencies (sampleRTT) with the buffered minRTT and scales the limit by
// that gradient, plus a headroom of its square root. A request beyond the
// limit is answered 503 (or concurrency_limit_exceeded_status).
package adaptiveconcurrency

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	acv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/adaptive_concurrency/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.adaptive_concurrency"

// Envoy's runtime keys of the gradient controller's settings.
const (
	keyMinRTTInterval    = "adaptive_concurrency.gradient_controller.min_rtt_calc_interval_ms"
	keySampleInterval    = "adaptive_concurrency.gradient_controller.sample_rtt_calc_interval_ms"
	keyMaxLimit          = "adaptive_concurrency.gradient_controller.max_concurrency_limit"
	keyMinRTTRequests    = "adaptive_concurrency.gradient_controller.min_rtt_aggregate_request_count"
	keyPercentile        = "adaptive_concurrency.gradient_controller.sample_aggregate_percentile"
	keyJitter            = "adaptive_concurrency.gradient_controller.jitter"
	keyMinConcurrency    = "adaptive_concurrency.gradient_controller.min_concurrency"
	keyMinRTTBufferRatio = "adaptive_concurrency.gradient_controller.min_rtt_buffer"
)

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory: the filter's gradient
// controller starts now, in its first minRTT window.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*acv3.AdaptiveConcurrency)
	if !ok {
		return nil, errors.New("not an AdaptiveConcurrency configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	gc := cfg.GetGradientControllerConfig()
	if gc == nil {
		return nil, errors.New("gradient_controller_config: must be set")
	}
	mp := gc.GetMinRttCalcParams()
	interval := mp.GetInterval().AsDuration()
	var fixed time.Duration
	switch {
	case interval < 0:
		return nil, errors.New("gradient_controller_config.min_rtt_calc_params.interval: must not be negative")
	case interval == 0 && mp.GetFixedValue().AsDuration() <= 0:
		// A zero interval turns the minRTT's sampling off: the minRTT
		// is then the fixed value, which must be given.
		return nil, errors.New("gradient_controller_config.min_rtt_calc_params.fixed_value: must be positive when interval is zero (the minRTT is not sampled)")
	case interval == 0:
		fixed = mp.GetFixedValue().AsDuration()
	}
	lp := gc.GetConcurrencyLimitParams()
	s := settings{
		values:         valuesOf(ctx.Runtime),
		minRTTInterval: interval,
		fixedMinRTT:    fixed,
		sampleInterval: lp.GetConcurrencyUpdateInterval().AsDuration(),
		maxLimit:       wrappedOr(lp.GetMaxConcurrencyLimit().GetValue(), lp.GetMaxConcurrencyLimit() != nil, 1000),
		minRTTRequests: wrappedOr(mp.GetRequestCount().GetValue(), mp.GetRequestCount() != nil, 50),
		minConcurrency: wrappedOr(mp.GetMinConcurrency().GetValue(), mp.GetMinConcurrency() != nil, 3),
		percentile:     percentOr(gc.GetSampleAggregatePercentile(), 50),
		jitter:         percentOr(mp.GetJitter(), 15),
		buffer:         percentOr(mp.GetBuffer(), 25),
	}
	// min_concurrency_limit bounds the calculated limit from below; unset,
	// min_concurrency does, as it did before the field existed.
	s.minLimit, s.minLimitSet = lp.GetMinConcurrencyLimit().GetValue(), lp.GetMinConcurrencyLimit() != nil
	status := int(cfg.GetConcurrencyLimitExceededStatus().GetCode())
	if status < http.StatusBadRequest {
		// Envoy's toErrorCode: only an error status may refuse.
		status = http.StatusServiceUnavailable
	}
	c := &filterConfig{
		enabled: runtime.FeatureFlagOf(cfg.GetEnabled()),
		status:  status,
		ctrl:    newController(s, ctx.Stats.Scope(ctx.StatPrefix+"adaptive_concurrency.gradient_controller.")),
	}
	c.flags, _ = ctx.Runtime.(runtime.BoolReader)
	return c, nil
}

func wrappedOr(v uint32, set bool, def uint32) uint32 {
	if set {
		return v
	}
	return def
}

func percentOr(p *typev3.Percent, def float64) float64 {
	if p == nil {
		return def
	}
	return p.GetValue()
}

// valueReader reads a runtime value as text.
type valueReader interface {
	Get(key string) (string, bool)
}

// values reads the runtime's integers and numbers.
type values struct {
	ints httpfilter.Runtime
	text valueReader
}

func valuesOf(r httpfilter.Runtime) values {
	v := values{ints: r}
	v.text, _ = r.(valueReader)
	return v
}

// integer reads key, def when the runtime has no value.
func (v values) integer(key string, def uint64) uint64 {
	if v.ints == nil {
		return def
	}
	return v.ints.Uint64(key, def)
}

// percent reads a percentage under key, as Envoy's getDouble, clamped to
// [0, 100] and normalised to [0, 1].
func (v values) percent(key string, def float64) float64 {
	val := def
	if v.text != nil {
		if s, ok := v.text.Get(key); ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
				val = f
			}
		}
	}
	return max(0, min(val, 100)) / 100
}

// settings are the gradient controller's configuration; each value has
// Envoy's runtime key.
type settings struct {
	values                                   values
	minRTTInterval, sampleInterval           time.Duration
	maxLimit, minRTTRequests, minConcurrency uint32
	percentile, jitter, buffer               float64
	// fixedMinRTT is min_rtt_calc_params.fixed_value when the interval is
	// zero: the minRTT is never sampled. Zero when it is.
	fixedMinRTT time.Duration
	// minLimit is concurrency_limit_params.min_concurrency_limit, when
	// minLimitSet.
	minLimit    uint32
	minLimitSet bool
}

func (s settings) minRTTCalcInterval() time.Duration {
	return time.Duration(s.values.integer(keyMinRTTInterval, uint64(s.minRTTInterval.Milliseconds()))) * time.Millisecond
}

func (s settings) sampleRTTCalcInterval() time.Duration {
	return time.Duration(s.values.integer(keySampleInterval, uint64(s.sampleInterval.Milliseconds()))) * time.Millisecond
}

func (s settings) maxConcurrencyLimit() uint32 {
	return uint32(min(s.values.integer(keyMaxLimit, uint64(s.maxLimit)), math.MaxUint32))
}

func (s settings) minRTTAggregateRequestCount() uint32 {
	return uint32(min(s.values.integer(keyMinRTTRequests, uint64(s.minRTTRequests)), math.MaxUint32))
}

func (s settings) minConcurrencyLimit() uint32 {
	return uint32(min(s.values.integer(keyMinConcurrency, uint64(s.minConcurrency)), math.MaxUint32))
}

// lowerLimit is the least limit a calculation may set:
// min_concurrency_limit, else the minRTT window's min_concurrency (with
// its runtime key).
func (s settings) lowerLimit() uint32 {
	if s.minLimitSet {
		return s.minLimit
	}
	return s.minConcurrencyLimit()
}

func (s settings) sampleAggregatePercentile() float64 {
	return s.values.percent(keyPercentile, s.percentile)
}
func (s settings) jitterPercent() float64 { return s.values.percent(keyJitter, s.jitter) }
func (s settings) minRTTBufferPercent() float64 {
	return s.values.percent(keyMinRTTBufferRatio, s.buffer)
}

// filterConfig is the compiled filter and its controller, shared by the
// connection manager's requests.
type filterConfig struct {
	enabled runtime.FeatureFlag
	flags   runtime.BoolReader
	status  int
	ctrl    *controller
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{cfg: c} }

// Close stops the controller's timers once the configuration is gone.
func (c *filterConfig) Close() error {
	c.ctrl.stop()
	return nil
}
