// Package als is the gRPC access log service sinks
// (envoy.access_loggers.http_grpc and envoy.access_loggers.tcp_grpc): the
// entries of finished requests, batched and streamed to an
// AccessLogService over one long-lived StreamAccessLogs call, whose first
// message identifies the proxy (node and log_name).
//
// Logging never waits for the service: entries collect in a buffer that a
// goroutine sends when it holds buffer_size_bytes or every
// buffer_flush_interval. While a send is held up (the service is slow or
// unreachable), the buffer grows to buffer_size_bytes and further entries
// are dropped and counted, as Envoy drops them when its stream is above
// its write watermark. A stream the service ends is opened again by the
// next send.
package als

import (
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	grpcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// The loggers' names in Outrigger's spelling.
const (
	HTTPName = "proxy.access_loggers.http_grpc"
	TCPName  = "proxy.access_loggers.tcp_grpc"
)

// statPrefix is where Envoy keeps the gRPC access loggers' counters.
const statPrefix = "access_logs.grpc_access_log."

// HTTP builds loggers that send HTTP entries from HttpGrpcAccessLogConfig
// configurations.
type HTTP struct{}

// Compile implements accesslog.SinkFactory.
func (HTTP) Compile(config proto.Message, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	cfg, ok := config.(*grpcv3.HttpGrpcAccessLogConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", HTTPName, config)
	}
	if cfg.GetCommonConfig() == nil {
		return nil, errors.New("common_config: required")
	}
	s, err := compileCommon(cfg.GetCommonConfig(), ctx)
	if err != nil {
		return nil, fmt.Errorf("common_config.%w", err)
	}
	s.kind = httpLogs
	s.requestHeaders = lower(cfg.GetAdditionalRequestHeadersToLog())
	s.responseHeaders = lower(cfg.GetAdditionalResponseHeadersToLog())
	s.responseTrailers = lower(cfg.GetAdditionalResponseTrailersToLog())
	return s.start(ctx)
}

// TCP builds loggers that send TCP entries (the common properties and the
// byte counts) from TcpGrpcAccessLogConfig configurations.
type TCP struct{}

// Compile implements accesslog.SinkFactory.
func (TCP) Compile(config proto.Message, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	cfg, ok := config.(*grpcv3.TcpGrpcAccessLogConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", TCPName, config)
	}
	if cfg.GetCommonConfig() == nil {
		return nil, errors.New("common_config: required")
	}
	s, err := compileCommon(cfg.GetCommonConfig(), ctx)
	if err != nil {
		return nil, fmt.Errorf("common_config.%w", err)
	}
	s.kind = tcpLogs
	return s.start(ctx)
}

// compileCommon checks a CommonGrpcAccessLogConfig; errors name the field
// below it.
func compileCommon(c *grpcv3.CommonGrpcAccessLogConfig, ctx accesslog.SinkContext) (*sink, error) {
	s := &sink{
		logName:    c.GetLogName(),
		flushEvery: accesslog.DefaultFlushInterval,
		maxBytes:   accesslog.DefaultBufferBytes,
		node:       ctx.Node,
	}
	switch {
	case s.logName == "":
		return nil, errors.New("log_name: must be set")
	case c.GetGrpcService() == nil:
		return nil, errors.New("grpc_service: required")
	//lint:ignore SA1019 the deprecated V2 value is refused by name
	case c.GetTransportApiVersion() == corev3.ApiVersion_V2:
		return nil, errors.New("transport_api_version: V2 is not supported (use V3)")
	case len(c.GetFilterStateObjectsToLog()) > 0:
		return nil, errors.New("filter_state_objects_to_log: not supported by Outrigger")
	}
	if rp := c.GetGrpcStreamRetryPolicy(); rp != nil && c.GetGrpcService().GetEnvoyGrpc() != nil {
		// As Envoy's: num_retries only (default 0 here: Envoy reads the
		// wrapped value), Envoy gRPC services only.
		s.streamRetries = int(rp.GetNumRetries().GetValue())
	}
	if d := c.GetBufferFlushInterval(); d != nil {
		if s.flushEvery = d.AsDuration(); s.flushEvery <= 0 {
			return nil, errors.New("buffer_flush_interval: must be positive")
		}
	}
	if b := c.GetBufferSizeBytes(); b != nil {
		s.maxBytes = int(b.GetValue())
	}
	for i, t := range c.GetCustomTags() {
		ct, err := accesslog.CompileCustomTag(t)
		if err != nil {
			return nil, fmt.Errorf("custom_tags[%d].%w", i, err)
		}
		s.tags = append(s.tags, ct)
	}
	if ctx.OpenGRPC == nil {
		return nil, errors.New("grpc_service: gRPC services cannot be reached here")
	}
	ch, err := ctx.OpenGRPC(c.GetGrpcService())
	if err != nil {
		return nil, fmt.Errorf("grpc_service.%w", err)
	}
	s.ch = ch
	return s, nil
}

// lower returns the header names in lower case, as entries are read.
func lower(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	return out
}
