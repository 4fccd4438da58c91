package httpconn

import (
	"fmt"
	"math"
	"sync/atomic"

	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// defaultMaxPathTagLength is Envoy's max_path_tag_length default.
const defaultMaxPathTagLength = 256

// fraction is a sampling percentage as Envoy evaluates it.
type fraction = router.Fraction

// tracingConfig is the connection manager's tracing, compiled.
type tracingConfig struct {
	// driver is the provider; nil when neither the connection manager nor
	// the bootstrap names one (Envoy's null tracer: decisions and stats,
	// no spans).
	driver tracing.Driver
	// ctxDriver is driver when it can start an unsampled span as a bare
	// context (tracing.ContextDriver), else nil.
	ctxDriver tracing.ContextDriver
	// ctxTraceparent is ctxDriver when it propagates in W3C's
	// traceparent (tracing.TraceparentDriver), else nil.
	ctxTraceparent tracing.TraceparentDriver
	// egress: the listener is OUTBOUND, spans are the client's.
	egress                  bool
	client, random, overall fraction
	tags                    []customTag
	maxPathTagLength        int
	// spawnUpstream is spawn_upstream_span: the router starts a child
	// span per upstream request (as the router's start_child_span does).
	spawnUpstream bool
	// childSpans: spawn_upstream_span or the router's start_child_span
	// asks for a child span per upstream request; ctxOnly is ctxDriver
	// when neither does (an unsampled request then needs no span), else
	// nil. Both are set with the filters (withRouter).
	childSpans bool
	// noPropagation is no_context_propagation: spans are reported, but
	// no trace context is written into upstream requests.
	noPropagation bool
	ctxOnly       tracing.ContextDriver
	// startTable is the headers the start's pass finds: those of the
	// decision and the span's start (startHeaderTable) or, when
	// random_sampling is 50% or more and most requests are expected
	// sampled, those of their finished spans too (sampledHeaderTable).
	startTable   *spanHeaderTable
	nodeID, zone string
	// consts are the tags every sampled span has with the same value,
	// encoded once for the driver; nil without a driver.
	consts *constTags
	// verbose logs the request's timing events to its spans.
	verbose bool
	// operation and upstreamOperation name the request's span and the
	// upstream child span (with spawn_upstream_span); nil keeps the
	// names of the decorators. Missing values format as empty.
	operation, upstreamOperation *accesslog.Formatter
	// snapshots tells the runtime's current snapshot, nil when the
	// runtime cannot (the sampling keys are then read per request);
	// resolved holds the sampling keys as last resolved, in the
	// snapshot it names.
	snapshots runtimeSnapshots
	resolved  atomic.Pointer[samplingShares]
}

// runtimeSnapshots is a runtime (the server's) that tells its current
// snapshot, an immutable value: the sampling keys, which Envoy reads for
// every request, are resolved once per snapshot, the same values for a
// fraction of the cost (two map reads behind interface conversions per
// key and request).
type runtimeSnapshots interface {
	Snapshot() *runtime.Snapshot
}

// The runtime keys of Envoy's sampling decision.
const (
	keyClientEnabled  = "tracing.client_enabled"
	keyRandomSampling = "tracing.random_sampling"
	keyGlobalEnabled  = "tracing.global_enabled"
)

// share is what a runtime key sets of a sampling fraction (runtime.Override),
// set false when it leaves the configured one.
type share struct {
	num, den uint64
	set      bool
}

// resolveShare reads key's share in r; a nil r sets none.
func resolveShare(r runtime.Reader, key string) share {
	if r == nil {
		return share{}
	}
	n, d, ok := runtime.Override(r, key)
	return share{num: n, den: d, set: ok}
}

// enabled draws as runtime.Fraction.Enabled does, with def the
// configured fraction.
func (sh share) enabled(def fraction, random uint64) bool {
	num, den := def.Num, def.Den
	if sh.set {
		num, den = sh.num, sh.den
	}
	return den != 0 && random%den < num
}

// samplingShares are the sampling keys resolved in one snapshot.
type samplingShares struct {
	snap                   *runtime.Snapshot
	client, random, global share
}

// resolveShares reads the sampling keys in r.
func resolveShares(r runtime.Reader) samplingShares {
	return samplingShares{
		client: resolveShare(r, keyClientEnabled),
		random: resolveShare(r, keyRandomSampling),
		global: resolveShare(r, keyGlobalEnabled),
	}
}

// shares returns the sampling keys' values in the runtime's current
// snapshot: those resolved for an earlier request while the snapshot is
// the same one. Workers race to store a new resolution harmlessly: each
// is complete and names its snapshot. A runtime that does not tell its
// snapshots is read into scratch, which is returned.
func (t *tracingConfig) shares(rt RuntimeValues, scratch *samplingShares) *samplingShares {
	if t.snapshots == nil {
		*scratch = samplingShares{}
		if rt != nil {
			*scratch = resolveShares(rt)
		}
		return scratch
	}
	snap := t.snapshots.Snapshot()
	if c := t.resolved.Load(); c != nil && c.snap == snap {
		return c
	}
	c := resolveShares(snap)
	c.snap = snap
	t.resolved.Store(&c)
	return &c
}

// customTag is one custom_tags entry.
type customTag = router.CustomTag

// percent converts a Percent to Envoy's rounded fraction of den, def when
// unset.
func percent(p *typev3.Percent, den uint64) fraction {
	if p == nil {
		return fraction{Num: den, Den: den}
	}
	return fraction{Num: uint64(math.Round(p.GetValue() / 100 * float64(den))), Den: den}
}

// readTracing compiles the connection manager's tracing, nil when it has
// none. Errors name the field path below the http_connection_manager.
func readTracing(cfg *hcmv3.HttpConnectionManager, deps Deps) (*tracingConfig, error) {
	tc := cfg.GetTracing()
	if tc == nil {
		return nil, nil
	}
	t := &tracingConfig{
		verbose:          tc.GetVerbose(),
		egress:           deps.Egress,
		client:           percent(tc.GetClientSampling(), 100),
		random:           percent(tc.GetRandomSampling(), 10000),
		overall:          percent(tc.GetOverallSampling(), 100),
		maxPathTagLength: defaultMaxPathTagLength,
		spawnUpstream:    tc.GetSpawnUpstreamSpan().GetValue(),
		noPropagation:    tc.GetNoContextPropagation(),
		nodeID:           deps.Tracing.Node.GetId(),
		zone:             deps.Tracing.Node.GetLocality().GetZone(),
	}
	t.startTable = startHeaderTable
	if 2*t.random.Num >= t.random.Den {
		t.startTable = sampledHeaderTable
	}
	t.snapshots, _ = deps.Runtime.(runtimeSnapshots)
	var err error
	if t.operation, err = router.OperationFormat(tc.GetOperation()); err != nil {
		return nil, fmt.Errorf("tracing.operation: %w", err)
	}
	if t.upstreamOperation, err = router.OperationFormat(tc.GetUpstreamOperation()); err != nil {
		return nil, fmt.Errorf("tracing.upstream_operation: %w", err)
	}
	if v := tc.GetMaxPathTagLength(); v != nil {
		t.maxPathTagLength = int(v.GetValue())
	}
	for i, ct := range tc.GetCustomTags() {
		tag, err := router.CompileCustomTag(ct)
		if err != nil {
			return nil, fmt.Errorf("tracing.custom_tags[%d].%w", i, err)
		}
		t.tags = append(t.tags, tag)
	}
	provider, path := tc.GetProvider(), "tracing.provider"
	if provider == nil && deps.DefaultTracer != nil {
		provider, path = deps.DefaultTracer, "bootstrap tracing.http"
	}
	if provider != nil {
		d, err := buildTracer(provider, deps)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", path, err)
		}
		t.driver = d
		t.ctxDriver, _ = d.(tracing.ContextDriver)
		t.ctxTraceparent, _ = d.(tracing.TraceparentDriver)
		t.consts = newConstTags(d, t.nodeID, t.zone)
	}
	return t, nil
}

// buildTracer resolves a provider with the registry's tracers and compiles
// it.
func buildTracer(h *tracev3.Tracing_Http, deps Deps) (tracing.Driver, error) {
	ext, msg, err := deps.Extensions.Resolve(extension.Ref{
		Kind: "tracer", Category: tracing.Category, Name: h.GetName(), Config: h.GetTypedConfig(),
	}, lookupByName(deps.Runtime))
	if err != nil {
		return nil, err
	}
	f, ok := ext.Factory.(tracing.Factory)
	if !ok {
		return nil, fmt.Errorf("typed_config: extension %q is not a tracer", ext.Name)
	}
	ctx := deps.Tracing
	if ctx.Extensions == nil {
		ctx.Extensions = deps.Extensions
	}
	d, err := f.Compile(msg, ctx)
	if err != nil {
		return nil, fmt.Errorf("typed_config.%w", err)
	}
	return d, nil
}

// withRouter completes t with the router's start_child_span, resolving
// once what every request's start asks (childSpans, ctxOnly).
func (t *tracingConfig) withRouter(startChildSpan bool) {
	if t == nil {
		return
	}
	t.childSpans = startChildSpan || t.spawnUpstream
	if !t.childSpans {
		t.ctxOnly = t.ctxDriver
	}
}
