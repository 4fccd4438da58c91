package fault

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the key of the filter's per-route configurations.
	name     string
	settings *settings
	runtime  httpfilter.Runtime
	stats    filterStats
	// store and prefix make the per-downstream-cluster counters.
	store  *stats.Store
	prefix string
	pool   sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	return c.pool.Get().(*filter)
}

// filter is one request's fault filter, recycled once the request ends.
type filter struct {
	cfg *filterConfig
	set *settings
	// active: the request holds one of the active faults (one at most,
	// whatever it injects).
	active bool
	// downstream is the request's x-envoy-downstream-service-cluster;
	// when the request has one (hasDownstream, even empty), its runtime
	// keys replace the global ones, as in Envoy.
	downstream    string
	hasDownstream bool
	// throttling: the response rate limit was injected, and throttle
	// meters the response body out.
	throttling bool
	throttle   responseThrottle
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder, as Envoy's decodeHeaders:
// the response rate limit is set up first, then a delay, then, after it or
// instead of it, an abort.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.set = f.cfg.settings
	if rc, ok := s.RouteConfig(f.cfg.name).(*settings); ok {
		f.set = rc
	}
	set := f.set
	if !f.matches(s) {
		return httpfilter.Continue
	}
	req := s.RequestHeaders()
	f.downstream, f.hasDownstream = req.Get(hDownstreamCluster)
	f.rateLimit(s)
	if d := f.delayDuration(s); d > 0 && f.tryActivate() {
		f.count(f.cfg.stats.delaysInjected, "delays_injected")
		s.AddResponseFlags(accesslog.DelayInjected)
		f.setMetadata(s)
		if !s.Sleep(d) {
			return httpfilter.Stop
		}
		if f.abort(s) {
			return httpfilter.Stop
		}
		// The delay is over and nothing else is injected: the fault
		// is no longer active. As in Envoy, a configured response rate
		// limit keeps it active to the end, injected or not.
		if set.rateLimit == nil {
			f.deactivate()
		}
		return httpfilter.Continue
	}
	if set.abort != nil && f.abort(s) {
		return httpfilter.Stop
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: an injected response rate
// limit meters the body out.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.throttling {
		s.TransformResponseBody(&f.throttle)
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: an active fault ends with
// its request, and the filter goes back to the pool.
func (f *filter) OnDestroy() {
	f.deactivate()
	f.set, f.downstream, f.hasDownstream = nil, "", false
	f.throttling, f.throttle = false, responseThrottle{}
	f.cfg.pool.Put(f)
}

// rateLimit injects the response rate limit when its percentage draws it
// (under its runtime key: Envoy has no downstream cluster key for it) and
// it has a rate: the configured one or the request's
// x-envoy-fault-throughput-response (above 0).
func (f *filter) rateLimit(s httpfilter.Stream) {
	rl := f.set.rateLimit
	if rl == nil {
		return
	}
	pct := rl.percent
	if rl.fromHeader {
		pct = headerPercent(s, hThroughputPercentage, pct)
	}
	if !pct.Enabled(f.cfg.runtime, rand.Uint64()) {
		return
	}
	kbps := rl.kbps
	if rl.fromHeader {
		v, ok := headerUint(s, hThroughput)
		if !ok || v == 0 {
			return
		}
		kbps = v
	}
	if !f.tryActivate() {
		return
	}
	f.cfg.stats.responseRLInjected.Inc()
	f.throttle.start(kbps, time.Now())
	f.throttling = true
}

// setMetadata puts filter_metadata into the request's dynamic metadata,
// under the filter's name, as Envoy does when it delays or aborts.
func (f *filter) setMetadata(s httpfilter.Stream) {
	if md := f.set.metadata; md != nil {
		s.SetDynamicMetadata(f.cfg.name, md)
	}
}

// matches reports whether the request is one the settings fault: its
// upstream cluster, downstream node and headers.
func (f *filter) matches(s httpfilter.Stream) bool {
	set := f.set
	if set.upstreamCluster != "" {
		r := s.Route()
		if r == nil || r.Direct != nil || r.Redirect != nil || s.ClusterName() != set.upstreamCluster {
			return false
		}
	}
	if set.downstreamNodes != nil {
		node, ok := s.RequestHeaders().Get(hDownstreamNode)
		if !ok || !set.downstreamNodes[node] {
			return false
		}
	}
	return set.headers.Matches(s.Request())
}

// delayDuration is the delay to inject, 0 for none: when the delay's
// percentage (or the downstream cluster's runtime key) draws it, the
// configured or requested duration, overridden by the runtime.
func (f *filter) delayDuration(s httpfilter.Stream) time.Duration {
	d := f.set.delay
	if d == nil {
		return 0
	}
	pct := d.percent
	if d.fromHeader {
		pct = headerPercent(s, hDelayRequestPercentage, pct)
	}
	if !f.enabled(pct, ".delay.fixed_delay_percent") {
		return 0
	}
	ms := uint64(d.fixed / time.Millisecond)
	if d.fromHeader {
		v, ok := headerUint(s, hDelayRequest)
		if !ok {
			return 0
		}
		ms = v
	}
	ms = f.runtimeUint(f.set.delayDurationKey, ms)
	if f.hasDownstream {
		ms = f.runtimeUint(f.downstreamKey(".delay.fixed_duration_ms"), ms)
	}
	if ms > uint64(maxDelay/time.Millisecond) {
		ms = uint64(maxDelay / time.Millisecond)
	}
	return time.Duration(ms) * time.Millisecond
}

// maxDelay bounds a delay, whatever a header or the runtime ask for: the
// stream's timeouts cut delays shorter anyway, and a duration must not
// overflow.
const maxDelay = 24 * time.Hour

// abort injects the abort when its percentage draws it and it has a
// status: an HTTP status, else a gRPC one (with HTTP 200). It reports
// whether the request was answered.
func (f *filter) abort(s httpfilter.Stream) bool {
	a := f.set.abort
	if a == nil {
		return false
	}
	pct := a.percent
	if a.fromHeader {
		pct = headerPercent(s, hAbortRequestPercentage, pct)
	}
	if !f.enabled(pct, ".abort.abort_percent") {
		return false
	}
	httpStatus, ok := f.abortHTTPStatus(s)
	if ok {
		if !f.tryActivate() {
			return false
		}
		f.count(f.cfg.stats.abortsInjected, "aborts_injected")
		f.setMetadata(s)
		s.SendLocalReply(int(httpStatus), a.body, accesslog.FaultInjected, "fault_filter_abort")
		return true
	}
	grpcStatus, ok := f.abortGrpcStatus(s)
	if !ok || !f.tryActivate() {
		return false
	}
	f.count(f.cfg.stats.abortsInjected, "aborts_injected")
	f.setMetadata(s)
	s.SendGrpcLocalReply(200, uint32(grpcStatus), a.body, accesslog.FaultInjected, "fault_filter_abort")
	return true
}

// abortHTTPStatus is the HTTP status of the abort: the configured one or
// the request's x-envoy-fault-abort-request (in [200, 600)), overridden
// by the runtime, then by the downstream cluster's key.
func (f *filter) abortHTTPStatus(s httpfilter.Stream) (uint64, bool) {
	a := f.set.abort
	code, ok := a.httpStatus, a.hasHTTPStatus
	if a.fromHeader {
		code, ok = headerUint(s, hAbortRequest)
		ok = ok && code >= 200 && code < 600
	}
	if !ok {
		return 0, false
	}
	def := code
	code = f.runtimeUint(f.set.abortHTTPStatusKey, def)
	if f.hasDownstream {
		code = f.runtimeUint(f.downstreamKey(".abort.http_status"), def)
	}
	if code < 100 || code > 999 {
		// A status the response line cannot carry; the configuration's
		// is valid.
		code = def
	}
	return code, true
}

// abortGrpcStatus is the gRPC status of the abort: the configured one or
// the request's x-envoy-fault-abort-grpc-request, overridden by the
// runtime as the HTTP status is.
func (f *filter) abortGrpcStatus(s httpfilter.Stream) (uint64, bool) {
	a := f.set.abort
	code, ok := a.grpcStatus, a.hasGrpc
	if a.fromHeader {
		code, ok = headerUint(s, hAbortGrpcRequest)
	}
	if !ok {
		return 0, false
	}
	def := code
	code = f.runtimeUint(f.set.abortGrpcStatusKey, def)
	if f.hasDownstream {
		code = f.runtimeUint(f.downstreamKey(".abort.grpc_status"), def)
	}
	return code, true
}

// enabled draws a fault's percentage: under the downstream cluster's key
// (fault.http.<cluster><suffix>) when the request names its cluster,
// else under the configured key.
func (f *filter) enabled(pct runtime.Fraction, suffix string) bool {
	if f.hasDownstream {
		pct.Key = f.downstreamKey(suffix)
	}
	return pct.Enabled(f.cfg.runtime, rand.Uint64())
}

// downstreamKey is the runtime key of the request's downstream cluster.
func (f *filter) downstreamKey(suffix string) string {
	return "fault.http." + f.downstream + suffix
}

// runtimeUint reads an integer runtime value.
func (f *filter) runtimeUint(key string, def uint64) uint64 {
	if f.cfg.runtime == nil {
		return def
	}
	return f.cfg.runtime.Uint64(key, def)
}

// tryActivate makes the request hold an active fault, unless
// max_active_faults (or its runtime key) is reached: then it counts
// faults_overflow and reports false. A request holds one at most.
func (f *filter) tryActivate() bool {
	if f.active {
		return true
	}
	limit := f.runtimeUint(f.set.maxActiveKey, f.set.maxActive)
	g := f.cfg.stats.activeFaults
	// Like Envoy's, a fuzzy limit: no compare-and-swap.
	if v := g.Value(); v >= 0 && uint64(v) >= limit {
		f.cfg.stats.faultsOverflow.Inc()
		return false
	}
	g.Inc()
	f.active = true
	return true
}

// deactivate releases the request's active fault, if it holds one.
func (f *filter) deactivate() {
	if f.active {
		f.cfg.stats.activeFaults.Dec()
		f.active = false
	}
}

// count increments a fault counter, and the downstream cluster's when the
// request names one (unless disable_downstream_cluster_stats).
func (f *filter) count(c *stats.Counter, name string) {
	c.Inc()
	if f.downstream != "" && !f.set.noDownstreamStats {
		f.cfg.downstreamCounter(f.downstream, name).Inc()
	}
}

// headerPercent is a header fault's percentage: the request's header
// (an integer numerator, capped at the configured one, over the same
// denominator) when it has a valid one.
func headerPercent(s httpfilter.Stream, header string, def runtime.Fraction) runtime.Fraction {
	v, ok := headerUint(s, header)
	if !ok || v > uint64(^uint32(0)) {
		return def
	}
	def.Numerator = min(v, def.Numerator)
	return def
}

// headerUint reads a request header as a non-negative integer; only its
// first value counts, as the header is untrusted.
func headerUint(s httpfilter.Stream, name string) (uint64, bool) {
	v, ok := s.RequestHeaders().Get(name)
	if !ok {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] == ',' {
			v = v[:i]
			break
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}
