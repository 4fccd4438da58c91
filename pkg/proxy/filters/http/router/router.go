// Package router is the registry entry of the router HTTP filter
// (envoy.filters.http.router), the terminal filter: the connection manager
// routes and forwards each request itself once the filters before the
// router continued (see package httpconn). Of its configuration, Outrigger
// implements start_child_span, suppress_envoy_headers, dynamic_stats,
// upstream_http_filters, upstream_log, upstream_log_options,
// strict_check_headers, respect_expected_rq_timeout,
// suppress_grpc_request_failure_code_stats and
// reject_connect_request_early_data (which has nothing to reject: no
// request arrives as TLS early data).
package router

import (
	"errors"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.router"

// Factory builds the router's configuration.
type Factory struct{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*routerv3.Router)
	if !ok {
		return nil, errors.New("not a Router configuration")
	}
	// The router's upstream filters keep their stats under the root
	// scope, not the connection manager's: Envoy gives them the prefix
	// of the router's factory context scope, which is the server's
	// ("ext_proc.<stat_prefix>.streams_started").
	uctx := ctx
	uctx.StatPrefix = ""
	upstream, err := httpfilter.CompileUpstream("upstream_http_filters", cfg.GetUpstreamHttpFilters(), uctx)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 start_child_span is deprecated for the connection manager's spawn_upstream_span, and still accepted (with Envoy's deprecation warning).
	childSpan := cfg.GetStartChildSpan()
	return terminal{
		childSpan:       childSpan,
		suppressHeaders: cfg.GetSuppressEnvoyHeaders(),
		// Envoy's default is true.
		dynamicStats:      cfg.GetDynamicStats() == nil || cfg.GetDynamicStats().GetValue(),
		upstream:          upstream,
		upstreamLog:       httpfilter.UpstreamLogOf(cfg),
		strict:            cfg.GetStrictCheckHeaders(),
		respectExpected:   cfg.GetRespectExpectedRqTimeout(),
		suppressGrpcCodes: cfg.GetSuppressGrpcRequestFailureCodeStats(),
	}, nil
}

// terminal marks the end of the filter chain.
type terminal struct {
	childSpan, suppressHeaders, dynamicStats bool
	upstream                                 *httpfilter.UpstreamChain
	upstreamLog                              httpfilter.UpstreamLog
	// strict is strict_check_headers; respectExpected
	// respect_expected_rq_timeout; suppressGrpcCodes
	// suppress_grpc_request_failure_code_stats.
	strict                             []string
	respectExpected, suppressGrpcCodes bool
}

// StrictCheckHeaders reports strict_check_headers: the x-envoy- request
// headers whose invalid value is answered 400.
func (t terminal) StrictCheckHeaders() []string { return t.strict }

// RespectExpectedRqTimeout reports respect_expected_rq_timeout: an
// internal request's x-envoy-expected-rq-timeout-ms sets its timeout.
func (t terminal) RespectExpectedRqTimeout() bool { return t.respectExpected }

// SuppressGrpcRequestFailureCodeStats reports
// suppress_grpc_request_failure_code_stats: gRPC requests count in no
// cluster upstream_rq_<code> or upstream_rq_<class> stat.
func (t terminal) SuppressGrpcRequestFailureCodeStats() bool { return t.suppressGrpcCodes }

// UpstreamLog implements the connection manager's upstreamLogRouter: the
// router's upstream_log and upstream_log_options, which the connection
// manager compiles with its own access-log dependencies (see
// pkg/proxy/httpconn/uplog.go).
func (t terminal) UpstreamLog() httpfilter.UpstreamLog { return t.upstreamLog }

// UpstreamFilters is the compiled upstream_http_filters, nil without
// them: the chain each upstream attempt runs, unless the cluster has its
// own.
func (t terminal) UpstreamFilters() *httpfilter.UpstreamChain { return t.upstream }

// SuppressEnvoyHeaders reports suppress_envoy_headers: the router adds
// none of its x-envoy- headers (expected timeout, original path and
// host, upstream service time).
func (t terminal) SuppressEnvoyHeaders() bool { return t.suppressHeaders }

// DynamicStats reports dynamic_stats: the per-code and timing stats of
// the clusters, virtual clusters and routes are kept.
func (t terminal) DynamicStats() bool { return t.dynamicStats }

// StartChildSpan reports start_child_span: with tracing, each upstream
// request gets a span of its own, a child of the request's.
func (t terminal) StartChildSpan() bool { return t.childSpan }

// NewFilter implements httpfilter.Config: the router has no filter of its
// own, the connection manager forwards.
func (terminal) NewFilter() httpfilter.Filter { return nil }

// IsTerminal implements httpfilter.Terminal.
func (terminal) IsTerminal() bool { return true }
