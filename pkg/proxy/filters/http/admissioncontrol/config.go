// Package admissioncontrol is the HTTP filter
// envoy.filters.http.admission_control: it keeps the success rate of the
// requests it saw over a sliding window and, when that rate falls below
// the threshold, refuses new requests with a 503 with a probability that
// grows as the rate falls, as Envoy's filter does (client-side throttling
// from the SRE book). What counts as success is the configuration's: HTTP
// status ranges (by default anything below 500) and gRPC statuses (by
// default those that say the server is healthy).
package admissioncontrol

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	acv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/admission_control/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.admission_control"

// Envoy's defaults.
const (
	defaultSamplingWindow          = 30 * time.Second
	defaultAggression              = 1.0
	defaultSuccessRateThreshold    = 95.0
	defaultMaxRejectionProbability = 80.0
)

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*acv3.AdmissionControl)
	if !ok {
		return nil, errors.New("not an AdmissionControl configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if cfg.GetSrThreshold() != nil && cfg.GetSrThreshold().GetDefaultValue().GetValue() < 1.0 {
		return nil, errors.New("sr_threshold.default_value: Success rate threshold cannot be less than 1.0%")
	}
	if cfg.GetSuccessCriteria() == nil {
		return nil, errors.New("success_criteria: Evaluation criteria not set")
	}
	ev, err := compileCriteria(cfg.GetSuccessCriteria())
	if err != nil {
		return nil, fmt.Errorf("success_criteria.%w", err)
	}
	window := defaultSamplingWindow
	if w := cfg.GetSamplingWindow(); w != nil {
		// Envoy keeps whole seconds.
		window = w.AsDuration().Truncate(time.Second)
	}
	c := &filterConfig{
		enabled:     runtime.FeatureFlagOf(cfg.GetEnabled()),
		aggression:  doubleOf(cfg.GetAggression(), defaultAggression),
		srThreshold: percentOf(cfg.GetSrThreshold(), defaultSuccessRateThreshold),
		maxReject:   percentOf(cfg.GetMaxRejectionProbability(), defaultMaxRejectionProbability),
		rps:         uint32Of(cfg.GetRpsThreshold()),
		criteria:    ev,
		rejected:    ctx.Stats.Scope(ctx.StatPrefix + "admission_control.").Counter("rq_rejected"),
		now:         ctx.Now,
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.flags, _ = ctx.Runtime.(runtime.BoolReader)
	c.values, _ = ctx.Runtime.(valueReader)
	c.ints = ctx.Runtime
	c.history = newHistory(window)
	return c, nil
}

// valueReader reads a runtime value as text (RuntimeDouble and
// RuntimePercent values are numbers with a fraction).
type valueReader interface {
	Get(key string) (string, bool)
}

// runtimeNumber is a RuntimeDouble or RuntimePercent: a default a runtime
// value may replace.
type runtimeNumber struct {
	key string
	def float64
	// percent: the value must be within [0, 100] (Envoy's
	// Runtime::Percentage), else the default applies.
	percent bool
}

func doubleOf(d *corev3.RuntimeDouble, def float64) runtimeNumber {
	if d == nil {
		return runtimeNumber{def: def}
	}
	return runtimeNumber{key: d.GetRuntimeKey(), def: d.GetDefaultValue()}
}

func percentOf(p *corev3.RuntimePercent, def float64) runtimeNumber {
	if p == nil {
		return runtimeNumber{def: def, percent: true}
	}
	return runtimeNumber{key: p.GetRuntimeKey(), def: p.GetDefaultValue().GetValue(), percent: true}
}

// value reads n through r.
func (n runtimeNumber) value(r valueReader) float64 {
	if n.key == "" || r == nil {
		return n.def
	}
	s, ok := r.Get(n.key)
	if !ok {
		return n.def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || (n.percent && (v < 0 || v > 100)) {
		return n.def
	}
	return v
}

// runtimeUint32 is a RuntimeUInt32.
type runtimeUint32 struct {
	key string
	def uint64
}

func uint32Of(u *corev3.RuntimeUInt32) runtimeUint32 {
	return runtimeUint32{key: u.GetRuntimeKey(), def: uint64(u.GetDefaultValue())}
}

func (u runtimeUint32) value(r httpfilter.Runtime) uint64 {
	if u.key == "" || r == nil {
		return u.def
	}
	return min(r.Uint64(u.key, u.def), math.MaxUint32)
}

// criteria says which responses are successes.
type criteria struct {
	httpRanges [][2]int // [start, end)
	grpcCodes  map[uint32]bool
}

// defaultGrpcSuccesses are the gRPC statuses Envoy counts as successes by
// default: the ones that do not say the server is in trouble.
var defaultGrpcSuccesses = []uint32{6, 1, 9, 3, 5, 0, 11, 7, 16, 12, 2}

func compileCriteria(sc *acv3.AdmissionControl_SuccessCriteria) (criteria, error) {
	c := criteria{grpcCodes: map[uint32]bool{}}
	if hc := sc.GetHttpCriteria(); hc != nil {
		for i, r := range hc.GetHttpSuccessStatus() {
			start, end := r.GetStart(), r.GetEnd()
			if !(start <= end && start < 600 && start >= 100 && end <= 600 && end >= 100) {
				return c, fmt.Errorf("http_criteria.http_success_status[%d]: invalid HTTP range: [%d, %d)", i, start, end)
			}
			c.httpRanges = append(c.httpRanges, [2]int{int(start), int(end)})
		}
	} else {
		c.httpRanges = [][2]int{{0, 500}}
	}
	codes := defaultGrpcSuccesses
	if gc := sc.GetGrpcCriteria(); gc != nil {
		codes = gc.GetGrpcSuccessStatus()
	}
	for i, s := range codes {
		if s > 16 {
			return c, fmt.Errorf("grpc_criteria.grpc_success_status[%d]: invalid gRPC code %d", i, s)
		}
		c.grpcCodes[s] = true
	}
	return c, nil
}

func (c criteria) httpSuccess(status int) bool {
	for _, r := range c.httpRanges {
		if r[0] <= status && status < r[1] {
			return true
		}
	}
	return false
}

// filterConfig is the compiled filter: its settings and the history of
// the requests it saw, shared by the connection manager's requests.
type filterConfig struct {
	enabled                            runtime.FeatureFlag
	aggression, srThreshold, maxReject runtimeNumber
	rps                                runtimeUint32
	criteria                           criteria
	flags                              runtime.BoolReader
	values                             valueReader
	ints                               httpfilter.Runtime
	rejected                           *stats.Counter
	now                                func() time.Time
	history                            *history
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{cfg: c} }
