// Package fault is the fault injection HTTP filter
// (envoy.filters.http.fault): it delays requests and aborts them with an
// HTTP or gRPC status, for a share of the requests that match its
// headers, upstream cluster and downstream nodes, or as the request's own
// x-envoy-fault-* headers ask when the configuration allows it. Runtime
// keys override its percentages, durations and statuses; a route can
// replace its configuration (typed_per_filter_config). Its stats are
// Envoy's, under http.<stat_prefix>.fault.
//
// Delays hold the request's goroutine (httpfilter.Stream.Sleep), cut
// short by the stream's timeouts and by the client going away. A response
// rate limit meters the response body out through an httpfilter.Throttle
// (Envoy's StreamRateLimiter: a token bucket of the limit's KiB, refilled
// continuously, asked again every 50 ms). A delay or an abort puts
// filter_metadata into the request's dynamic metadata, under the filter's
// name.
package fault

import (
	"errors"
	"fmt"
	"math"
	"time"

	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.fault"

// Envoy's default runtime keys.
const (
	keyDelayPercent    = "fault.http.delay.fixed_delay_percent"
	keyAbortPercent    = "fault.http.abort.abort_percent"
	keyDelayDuration   = "fault.http.delay.fixed_duration_ms"
	keyAbortHTTPStatus = "fault.http.abort.http_status"
	keyAbortGrpcStatus = "fault.http.abort.grpc_status"
	keyMaxActiveFaults = "fault.http.max_active_faults"
	keyResponseRLPct   = "fault.http.rate_limit.response_percent"
)

// The request headers that control header faults.
const (
	hDelayRequest           = "x-envoy-fault-delay-request"
	hDelayRequestPercentage = "x-envoy-fault-delay-request-percentage"
	hAbortRequest           = "x-envoy-fault-abort-request"
	hAbortGrpcRequest       = "x-envoy-fault-abort-grpc-request"
	hAbortRequestPercentage = "x-envoy-fault-abort-request-percentage"
	hThroughput             = "x-envoy-fault-throughput-response"
	hThroughputPercentage   = "x-envoy-fault-throughput-response-percentage"
	hDownstreamNode         = "x-envoy-downstream-service-node"
	hDownstreamCluster      = "x-envoy-downstream-service-cluster"
)

// defaultAbortBody is the body of an abort when response_body is unset.
const defaultAbortBody = "fault filter abort"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	hf, ok := config.(*faultv3.HTTPFault)
	if !ok {
		return nil, errors.New("not an HTTPFault configuration")
	}
	set, err := compileSettings(hf)
	if err != nil {
		return nil, err
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	prefix := ctx.StatPrefix + "fault."
	sc := ctx.Stats.Scope(prefix)
	c := &filterConfig{
		name:     ctx.Name,
		settings: set,
		runtime:  ctx.Runtime,
		store:    ctx.Stats,
		prefix:   prefix,
		stats: filterStats{
			delaysInjected:     sc.Counter("delays_injected"),
			abortsInjected:     sc.Counter("aborts_injected"),
			responseRLInjected: sc.Counter("response_rl_injected"),
			faultsOverflow:     sc.Counter("faults_overflow"),
			activeFaults:       sc.Gauge("active_faults"),
		},
	}
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// CompileRoute implements httpfilter.RouteFactory: a route's HTTPFault
// replaces the filter's settings (the stats and the runtime stay the
// filter's).
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	hf, ok := config.(*faultv3.HTTPFault)
	if !ok {
		return nil, errors.New("not an HTTPFault configuration")
	}
	return compileSettings(hf)
}

// settings are a compiled HTTPFault.
type settings struct {
	delay     *delaySettings
	abort     *abortSettings
	rateLimit *rateLimitSettings
	// metadata is filter_metadata: the dynamic metadata of a request
	// delayed or aborted, nil when unset.
	metadata *structpb.Struct
	// upstreamCluster, when set, limits faults to requests routed there.
	upstreamCluster string
	// downstreamNodes, when set, limits faults to requests whose
	// x-envoy-downstream-service-node is one of them.
	downstreamNodes map[string]bool
	headers         router.HeaderMatch
	// maxActive is max_active_faults; math.MaxUint64 when unset.
	maxActive uint64
	// The runtime keys (Envoy's defaults unless the configuration names
	// others).
	delayPercentKey, abortPercentKey, delayDurationKey string
	abortHTTPStatusKey, abortGrpcStatusKey             string
	maxActiveKey, responseRLPercentKey                 string
	noDownstreamStats                                  bool
}

// delaySettings are a compiled FaultDelay: a fixed duration, or the
// request's x-envoy-fault-delay-request (fromHeader).
type delaySettings struct {
	fixed      time.Duration
	fromHeader bool
	percent    runtime.Fraction
}

// abortSettings are a compiled FaultAbort: a fixed HTTP or gRPC status,
// or the request's headers (fromHeader).
type abortSettings struct {
	httpStatus    uint64
	grpcStatus    uint64
	hasGrpc       bool
	fromHeader    bool
	percent       runtime.Fraction
	body          string
	hasHTTPStatus bool
}

// rateLimitSettings are a compiled FaultRateLimit: a fixed rate in KiB/s,
// or the request's x-envoy-fault-throughput-response (fromHeader).
type rateLimitSettings struct {
	kbps       uint64
	fromHeader bool
	percent    runtime.Fraction
}

// compileSettings compiles an HTTPFault; errors name the field below it.
func compileSettings(hf *faultv3.HTTPFault) (*settings, error) {
	s := &settings{
		upstreamCluster:    hf.GetUpstreamCluster(),
		maxActive:          math.MaxUint64,
		delayPercentKey:    or(hf.GetDelayPercentRuntime(), keyDelayPercent),
		abortPercentKey:    or(hf.GetAbortPercentRuntime(), keyAbortPercent),
		delayDurationKey:   or(hf.GetDelayDurationRuntime(), keyDelayDuration),
		abortHTTPStatusKey: or(hf.GetAbortHttpStatusRuntime(), keyAbortHTTPStatus),
		abortGrpcStatusKey: or(hf.GetAbortGrpcStatusRuntime(), keyAbortGrpcStatus),
		maxActiveKey:       or(hf.GetMaxActiveFaultsRuntime(), keyMaxActiveFaults),
		noDownstreamStats:  hf.GetDisableDownstreamClusterStats(),
		metadata:           hf.GetFilterMetadata(),
	}
	s.responseRLPercentKey = or(hf.GetResponseRateLimitPercentRuntime(), keyResponseRLPct)
	if v := hf.GetMaxActiveFaults(); v != nil {
		s.maxActive = uint64(v.GetValue())
	}
	if n := hf.GetDownstreamNodes(); len(n) > 0 {
		s.downstreamNodes = make(map[string]bool, len(n))
		for _, node := range n {
			s.downstreamNodes[node] = true
		}
	}
	var err error
	if s.headers, err = router.CompileHeaderMatch(hf.GetHeaders()); err != nil {
		return nil, err
	}
	if d := hf.GetDelay(); d != nil {
		if s.delay, err = compileDelay(d, s.delayPercentKey); err != nil {
			return nil, fmt.Errorf("delay.%w", err)
		}
	}
	if a := hf.GetAbort(); a != nil {
		if s.abort, err = compileAbort(a, s.abortPercentKey); err != nil {
			return nil, fmt.Errorf("abort.%w", err)
		}
	}
	if rl := hf.GetResponseRateLimit(); rl != nil {
		if s.rateLimit, err = compileRateLimit(rl, s.responseRLPercentKey); err != nil {
			return nil, fmt.Errorf("response_rate_limit.%w", err)
		}
	}
	return s, nil
}

// compileRateLimit compiles a FaultRateLimit, its percentage under key.
func compileRateLimit(rl *faultcommonv3.FaultRateLimit, key string) (*rateLimitSettings, error) {
	pct, err := runtime.FractionOf(key, rl.GetPercentage())
	if err != nil {
		return nil, fmt.Errorf("percentage.%w", err)
	}
	rs := &rateLimitSettings{percent: pct}
	switch spec := rl.GetLimitType().(type) {
	case *faultcommonv3.FaultRateLimit_FixedLimit_:
		if rs.kbps = spec.FixedLimit.GetLimitKbps(); rs.kbps == 0 {
			return nil, errors.New("fixed_limit.limit_kbps: must be at least 1")
		}
	case *faultcommonv3.FaultRateLimit_HeaderLimit_:
		rs.fromHeader = true
	default:
		return nil, errors.New("limit_type: one of fixed_limit or header_limit is required")
	}
	return rs, nil
}

// compileDelay compiles a FaultDelay, its percentage under key.
func compileDelay(d *faultcommonv3.FaultDelay, key string) (*delaySettings, error) {
	pct, err := runtime.FractionOf(key, d.GetPercentage())
	if err != nil {
		return nil, fmt.Errorf("percentage.%w", err)
	}
	ds := &delaySettings{percent: pct}
	switch spec := d.GetFaultDelaySecifier().(type) {
	case *faultcommonv3.FaultDelay_FixedDelay:
		if err := spec.FixedDelay.CheckValid(); err != nil {
			return nil, fmt.Errorf("fixed_delay: %w", err)
		}
		ds.fixed = spec.FixedDelay.AsDuration()
		if ds.fixed <= 0 {
			return nil, errors.New("fixed_delay: must be above 0")
		}
	case *faultcommonv3.FaultDelay_HeaderDelay_:
		ds.fromHeader = true
	default:
		return nil, errors.New("fault_delay_secifier: one of fixed_delay or header_delay is required")
	}
	return ds, nil
}

// compileAbort compiles a FaultAbort, its percentage under key.
func compileAbort(a *faultv3.FaultAbort, key string) (*abortSettings, error) {
	pct, err := runtime.FractionOf(key, a.GetPercentage())
	if err != nil {
		return nil, fmt.Errorf("percentage.%w", err)
	}
	as := &abortSettings{percent: pct, body: or(a.GetResponseBody(), defaultAbortBody)}
	switch spec := a.GetErrorType().(type) {
	case *faultv3.FaultAbort_HttpStatus:
		if spec.HttpStatus < 200 || spec.HttpStatus >= 600 {
			return nil, fmt.Errorf("http_status: %d is not in [200, 600)", spec.HttpStatus)
		}
		as.httpStatus, as.hasHTTPStatus = uint64(spec.HttpStatus), true
	case *faultv3.FaultAbort_GrpcStatus:
		as.grpcStatus, as.hasGrpc = uint64(spec.GrpcStatus), true
	case *faultv3.FaultAbort_HeaderAbort_:
		as.fromHeader = true
	default:
		return nil, errors.New("error_type: one of http_status, grpc_status or header_abort is required")
	}
	return as, nil
}

// or is v, or def when v is empty.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// filterStats are Envoy's fault filter stats, under
// http.<stat_prefix>.fault.
type filterStats struct {
	delaysInjected, abortsInjected *stats.Counter
	responseRLInjected             *stats.Counter
	faultsOverflow                 *stats.Counter
	activeFaults                   *stats.Gauge
}

// downstreamCounter is the counter of one downstream cluster,
// http.<stat_prefix>.fault.<cluster>.<name>: looked up by name, as Envoy
// builds it per request.
func (c *filterConfig) downstreamCounter(cluster, name string) *stats.Counter {
	return c.store.Counter(c.prefix + cluster + "." + name)
}
