// Package ratelimit is the global rate limit network filter
// (envoy.filters.network.ratelimit): when a connection is made, the filter
// asks the rate limit service (envoy.service.ratelimit.v3.RateLimitService)
// about its configured descriptors in its domain, reading nothing of the
// connection until the answer comes (or the timeout passes). OVER_LIMIT
// closes the connection; a failed call lets it through, or closes it with
// failure_mode_deny. Its stats are Envoy's, under ratelimit.<stat_prefix>.:
// total, ok, over_limit, error, failure_mode_allowed, cx_closed and the
// active gauge. The runtime keys ratelimit.tcp_filter_enabled and
// ratelimit.tcp_filter_enforcing (percentages, 100 by default) are read
// as in Envoy.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	netrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ratelimitservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.ratelimit"

// Envoy's local close reasons of the connections the filter closes.
var (
	refusalOverLimit = netfilter.Refusal{Reason: "ratelimit_close_over_limit"}
	refusalError     = netfilter.Refusal{Reason: "ratelimit_error_failure_mode_connection_close"}
	// refusalGone is a connection that ended during the call: Envoy
	// closes nothing itself then.
	refusalGone = netfilter.Refusal{}
)

// Factory compiles network RateLimit configurations.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Filter is a compiled network RateLimit.
type Filter struct {
	// req is the request of every call when the descriptors are fixed;
	// with formats (values with command operators), each connection's
	// request is made of domain and descs, those values rendered.
	req             *rlsv3.RateLimitRequest
	domain          string
	descs           []ratelimitservice.Descriptor
	formats         []valueFormat
	client          *ratelimitservice.Client
	failureModeDeny bool
	// enabled and enforced are Envoy's runtime keys, at 100% unless
	// the runtime says otherwise.
	enabled, enforced runtime.Fraction
	runtime           runtime.Reader

	total, ok, overLimit, errors, failureModeAllowed, cxClosed *stats.Counter
	active                                                     *stats.Gauge
}

var (
	_ netfilter.ReadFilter = (*Filter)(nil)
	_ io.Closer            = (*Filter)(nil)
)

// Close implements io.Closer: the service's channel, once the filter's
// connections are gone.
func (f *Filter) Close() error { return f.client.Close() }

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	p, ok := msg.(*netrlv3.RateLimit)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&netrlv3.RateLimit{}), msg)
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	switch {
	case p.GetStatPrefix() == "":
		return nil, errors.New("stat_prefix: must be set")
	case p.GetDomain() == "":
		return nil, errors.New("domain: must be set")
	case len(p.GetDescriptors()) == 0:
		return nil, errors.New("descriptors: at least one descriptor is required")
	}
	var descs []ratelimitservice.Descriptor
	var formats []valueFormat
	for i, d := range p.GetDescriptors() {
		if len(d.GetEntries()) == 0 {
			return nil, fmt.Errorf("descriptors[%d].entries: at least one entry is required", i)
		}
		var entries []router.DescriptorEntry
		for j, e := range d.GetEntries() {
			if e.GetKey() == "" {
				return nil, fmt.Errorf("descriptors[%d].entries[%d].key: must be set", i, j)
			}
			if strings.Contains(e.GetValue(), "%") {
				// Envoy renders every value with the substitution
				// formatter, missing values as "-".
				vf, err := accesslog.Text(e.GetValue(), false)
				if err != nil {
					return nil, fmt.Errorf("descriptors[%d].entries[%d].value: %w", i, j, err)
				}
				if _, literal := vf.Literal(); !literal {
					formats = append(formats, valueFormat{desc: i, entry: j, format: vf})
				}
			}
			if e.GetValue() == "" {
				return nil, fmt.Errorf("descriptors[%d].entries[%d].value: must be set", i, j)
			}
			entries = append(entries, router.DescriptorEntry{Key: e.GetKey(), Value: e.GetValue()})
		}
		descs = append(descs, descriptorOf(d, entries))
	}
	f := &Filter{
		req:             ratelimitservice.Request(p.GetDomain(), descs),
		domain:          p.GetDomain(),
		descs:           descs,
		formats:         formats,
		failureModeDeny: p.GetFailureModeDeny(),
		enabled:         runtime.Fraction{Key: "ratelimit.tcp_filter_enabled", Numerator: 100, Denominator: 100},
		enforced:        runtime.Fraction{Key: "ratelimit.tcp_filter_enforcing", Numerator: 100, Denominator: 100},
	}
	f.runtime, _ = ctx.Runtime.(runtime.Reader)
	var err error
	if f.client, err = ratelimitservice.Open(p.GetRateLimitService(), p.GetTimeout(), ctx.OpenGRPC); err != nil {
		return nil, err
	}
	sc := ctx.Stats.Scope("ratelimit." + p.GetStatPrefix() + ".")
	f.total = sc.Counter("total")
	f.ok = sc.Counter("ok")
	f.overLimit = sc.Counter("over_limit")
	f.errors = sc.Counter("error")
	f.failureModeAllowed = sc.Counter("failure_mode_allowed")
	f.cxClosed = sc.Counter("cx_closed")
	f.active = sc.Gauge("active")
	return f, nil
}

// OnNewConnection asks the service about the connection, on the
// connection's goroutine: nothing of it is read until the answer comes,
// as Envoy stops reading during the call. A connection that ends meanwhile
// (the client leaving, or the server shutting down) cancels the call and,
// as in Envoy, counts nothing more than active going down: the connection
// is closed without a local close reason.
func (f *Filter) OnNewConnection(c netfilter.Conn) *netfilter.Refusal {
	if !f.enabled.Enabled(f.runtime, rand.Uint64()) {
		return nil
	}
	f.active.Inc()
	f.total.Inc()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.OnClose(cancel)
	stop := listenerfilter.WatchPeerClose(c, cancel)
	resp := f.client.Limit(ctx, f.request(c))
	stop()
	f.active.Dec()
	if resp.Status == ratelimitservice.Error && ctx.Err() != nil {
		return &refusalGone
	}
	switch resp.Status {
	case ratelimitservice.OK:
		f.ok.Inc()
	case ratelimitservice.OverLimit:
		f.overLimit.Inc()
		if f.enforced.Enabled(f.runtime, rand.Uint64()) {
			f.cxClosed.Inc()
			return &refusalOverLimit
		}
	case ratelimitservice.Error:
		f.errors.Inc()
		if f.failureModeDeny {
			f.cxClosed.Inc()
			return &refusalError
		}
		f.failureModeAllowed.Inc()
	}
	return nil
}

// descriptorOf is the call's descriptor of a configured one: its entries,
// and its limit override, hits_addend and is_negative_hits sent as they
// are configured (the descriptor is the wire's message).
func descriptorOf(d *commonv3.RateLimitDescriptor, entries []router.DescriptorEntry) ratelimitservice.Descriptor {
	out := ratelimitservice.Descriptor{Entries: entries, IsNegativeHits: d.GetIsNegativeHits()}
	if l := d.GetLimit(); l != nil {
		out.Limit = &router.LimitOverride{RequestsPerUnit: l.GetRequestsPerUnit(), Unit: l.GetUnit()}
		out.UnitMultiplier = l.GetUnitMultiplier().GetValue()
	}
	if h := d.GetHitsAddend(); h != nil {
		out.HitsAddend, out.HasHitsAddend = h.GetValue(), true
	}
	return out
}
