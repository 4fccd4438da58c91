// Package tap is the tap HTTP filter (envoy.filters.http.tap): with
// common_config.admin_config it traces the requests that the attached
// /tap session matches; with common_config.static_config it traces the
// matching requests to its file_per_tap sink. A trace is Envoy's
// http_buffered_trace (request and response headers, bodies up to
// max_buffered_rx_bytes / max_buffered_tx_bytes, request and response
// trailers), or with output_config.streaming its
// http_streamed_trace_segment messages; tap_config.tap_enabled samples the
// requests it looks at.
// It counts the traces in http.<stat_prefix>.tap.rq_tapped, as Envoy's.
package tap

import (
	"errors"
	"sync"

	taphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/tap/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.tap"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// TapRegistry is what the server offers the filter: the registry of
// admin-configured taps (through httpfilter.Context.Services).
type TapRegistry interface {
	TapRegistry() *tap.Registry
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	t, ok := config.(*taphttpv3.Tap)
	if !ok {
		return nil, errors.New("not a Tap configuration")
	}
	if t.GetRecordUpstreamConnection() {
		// Also refused by the support tables, with their reason.
		return nil, errors.New("record_upstream_connection: not supported by Outrigger")
	}
	rec := recording{time: t.GetRecordHeadersReceivedTime(), downstream: t.GetRecordDownstreamConnection()}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	tapped := ctx.Stats.Scope(ctx.StatPrefix + "tap.").Counter("rq_tapped")
	cc := t.GetCommonConfig()
	if ac := cc.GetAdminConfig(); ac != nil {
		if ac.GetConfigId() == "" {
			return nil, errors.New("common_config.admin_config.config_id: required")
		}
		tr, ok := ctx.Services.(TapRegistry)
		if !ok || tr.TapRegistry() == nil {
			return nil, errors.New("common_config.admin_config: no admin tap registry in this server")
		}
		reg := tr.TapRegistry()
		reg.Register(ac.GetConfigId(), tap.HTTPFilter)
		return newFilterConfig(&filterConfig{reg: reg, id: ac.GetConfigId(), tapped: tapped, runtime: ctx.Runtime, rec: rec}), nil
	}
	if sc := cc.GetStaticConfig(); sc != nil {
		if sc.GetOutputConfig().GetMinStreamedSentBytes() != nil {
			// Envoy's HTTP filter never reads it.
			return nil, errors.New("common_config.static_config.output_config.min_streamed_sent_bytes: not supported by the tap HTTP filter (only the tap transport socket uses it)")
		}
		c, err := tap.CompileStatic(sc, "common_config.static_config")
		if err != nil {
			return nil, err
		}
		return newFilterConfig(&filterConfig{static: c, tapped: tapped, runtime: ctx.Runtime, rec: rec}), nil
	}
	return nil, errors.New("common_config: admin_config or static_config is required")
}

// recording is record_headers_received_time (time) and
// record_downstream_connection (downstream): Envoy puts them in buffered
// traces only.
type recording struct{ time, downstream bool }

// filterConfig is the compiled filter: either an admin config id and the
// registry holding its session, or a static configuration.
type filterConfig struct {
	reg    *tap.Registry
	id     string
	static *tap.Config
	// tapped is http.<stat_prefix>.tap.rq_tapped: the traces written.
	tapped *stats.Counter
	// runtime overrides tap_enabled shares (their runtime_key).
	runtime httpfilter.Runtime
	// rec is what the buffered traces record besides the exchange.
	rec recording
	// pool recycles the filters of finished requests, so that a request
	// allocates nothing while no tap is active.
	pool sync.Pool
}

func newFilterConfig(c *filterConfig) *filterConfig {
	c.pool.New = func() any { return &filter{cfg: c} }
	return c
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	return c.pool.Get().(*filter)
}

// Close implements io.Closer: once the filter chain is gone, its config
// id is no longer one /tap may attach to (as Envoy's filter unregisters).
func (c *filterConfig) Close() error {
	if c.reg != nil {
		c.reg.Unregister(c.id, tap.HTTPFilter)
	}
	return nil
}
