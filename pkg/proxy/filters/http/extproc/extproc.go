// Package extproc is the external processing HTTP filter
// (envoy.filters.http.ext_proc): each request opens one bidirectional
// gRPC stream to an envoy.service.ext_proc.v3.ExternalProcessor service
// and sends it the phases its processing mode asks for (request headers,
// request body, response headers, response body, response trailers). The
// processor answers each message with mutations (headers, body), a new
// processing mode, or an immediate response that answers the request in
// its place. The request's own goroutine waits for each answer, bounded
// by message_timeout.
//
// A processor that fails or does not answer in time makes the request
// fail (500, or 504 for a timeout) unless failure_mode_allow lets it go
// on unprocessed. Header mutations go through mutation_rules as Envoy's
// HeaderMutationRules checker decides.
//
// It may run as an upstream filter too (the router's
// upstream_http_filters), as Envoy's dual factory allows: each attempt
// then opens its own stream, closed when the attempt ends (retried,
// hedged and lost, reset), and the processor sees the request as it goes
// upstream and the response of the attempt.
//
// Its stats are Envoy's: http.<stat_prefix>.ext_proc.[<filter
// stat_prefix>.]{streams_started,stream_msgs_sent,stream_msgs_received,
// spurious_msgs_received,streams_closed,streams_failed,
// failure_mode_allowed,message_timeouts,rejected_header_mutations,
// override_message_timeout_received,override_message_timeout_ignored,
// clear_route_cache_ignored,clear_route_cache_disabled}; upstream, the
// router's filters' are ext_proc.[<filter stat_prefix>.]*, as Envoy
// keeps them under its server scope.
package extproc

import (
	"errors"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.ext_proc"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory         = Factory{}
	_ httpfilter.RouteFactory    = Factory{}
	_ httpfilter.UpstreamCapable = Factory{}
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := config.(*extprocv3.ExternalProcessor)
	if !ok {
		return nil, errors.New("not an ExternalProcessor configuration")
	}
	return compile(p, ctx)
}

// UpstreamCapable implements httpfilter.UpstreamCapable: ext_proc is one
// of Envoy's dual filters.
func (Factory) UpstreamCapable() {}

// CompileRoute implements httpfilter.RouteFactory: an ExtProcPerRoute.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := config.(*extprocv3.ExtProcPerRoute)
	if !ok {
		return nil, errors.New("not an ExtProcPerRoute configuration")
	}
	return compileRoute(p, ctx)
}
