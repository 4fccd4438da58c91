// Package otel is the OpenTelemetry access logger
// (envoy.access_loggers.open_telemetry): each finished request or
// connection becomes an OTLP LogRecord (its start time, a body and
// attributes made from format strings, the ids of its span), and the
// records are batched into ExportLogsServiceRequests (one ResourceLogs
// with the proxy's resource attributes, one ScopeLogs) sent to a
// collector: to its LogsService/Export over gRPC, or POSTed as OTLP/HTTP
// protobuf through a cluster.
//
// Logging never waits for the collector: records collect in a buffer that
// a goroutine exports when it holds buffer_size_bytes or every
// buffer_flush_interval, one export at a time. While an export is held up
// the buffer fills to the larger of buffer_size_bytes and 1 MiB, and
// further records are dropped.
// As in Envoy, logs_written counts the records the collector accepted and
// logs_dropped those it rejected, those of failed exports and (Outrigger's
// bound) those the full buffer refused.
package otel

import (
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	grpcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	otelv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/open_telemetry/v3"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
)

// Name is the logger's name in Outrigger's spelling.
const Name = "proxy.access_loggers.open_telemetry"

// statRoot is where Envoy keeps the logger's counters; stat_prefix goes
// below it.
const statRoot = "access_logs.open_telemetry_access_log."

// Factory builds loggers from OpenTelemetryAccessLogConfig configurations.
type Factory struct{}

// Compile implements accesslog.SinkFactory.
func (Factory) Compile(config proto.Message, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	cfg, ok := config.(*otelv3.OpenTelemetryAccessLogConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	s, svc, err := compile(cfg, ctx)
	if err != nil {
		return nil, err
	}
	if s.exp, err = svc.open(ctx); err != nil {
		return nil, err
	}
	return s.start(ctx), nil
}

// service is the configured collector: a gRPC service or an HTTP
// service, and its field path.
type service struct {
	grpc *corev3.GrpcService
	http *corev3.HttpService
	path string
}

// open opens the exporter to the service; errors name the field path.
func (sv service) open(ctx accesslog.SinkContext) (exporter, error) {
	if sv.http != nil {
		for i, h := range sv.http.GetRequestHeadersToAdd() {
			// Envoy reads these values as format strings (of
			// environment variables, files, secrets).
			// (raw_value is checked with the rest by
			// tracing.CompileHTTPService.)
			if strings.Contains(h.GetHeader().GetValue(), "%") || strings.Contains(string(h.GetHeader().GetRawValue()), "%") {
				return nil, fmt.Errorf("%s.request_headers_to_add[%d].header.value: format operators are not supported by Outrigger", sv.path, i)
			}
		}
		// As Envoy, the request path is the uri's, "/" when it has
		// none.
		p, name, err := tracing.CompileHTTPService(sv.http, ctx.Cluster, "/")
		if err != nil {
			return nil, fmt.Errorf("%s.%w", sv.path, err)
		}
		return &httpExporter{p: p, name: name}, nil
	}
	if ctx.OpenGRPC == nil {
		return nil, fmt.Errorf("%s: gRPC services cannot be reached here", sv.path)
	}
	ch, err := ctx.OpenGRPC(sv.grpc)
	if err != nil {
		return nil, fmt.Errorf("%s.%w", sv.path, err)
	}
	return grpcExporter{ch: ch}, nil
}

// compile checks a configuration and compiles everything but the
// channel; errors name the field path below typed_config.
func compile(cfg *otelv3.OpenTelemetryAccessLogConfig, ctx accesslog.SinkContext) (*sink, service, error) {
	//lint:ignore SA1019 common_config is Envoy's deprecated spelling, still accepted.
	cc := cfg.GetCommonConfig()
	s := &sink{flushEvery: accesslog.DefaultFlushInterval, maxBytes: accesslog.DefaultBufferBytes}
	var gs service
	switch {
	// http_service, then grpc_service, then the deprecated
	// common_config.grpc_service, as Envoy prefers them; common_config
	// still carries the other common fields beside the top-level ones.
	case cfg.GetHttpService() != nil && cfg.GetGrpcService() != nil:
		return nil, gs, errors.New("http_service: only one of grpc_service and http_service may be set")
	case cfg.GetHttpService() != nil:
		gs = service{http: cfg.GetHttpService(), path: "http_service"}
	case cfg.GetGrpcService() != nil:
		gs = service{grpc: cfg.GetGrpcService(), path: "grpc_service"}
	case cc.GetGrpcService() != nil:
		gs = service{grpc: cc.GetGrpcService(), path: "common_config.grpc_service"}
	default:
		return nil, gs, errors.New("grpc_service: one of grpc_service, common_config.grpc_service or http_service is required")
	}
	if err := checkCommon(cc); err != nil {
		return nil, gs, fmt.Errorf("common_config.%w", err)
	}
	// The top-level fields win over common_config's, as in Envoy.
	s.logName = cfg.GetLogName()
	if s.logName == "" {
		s.logName = cc.GetLogName()
	}
	interval, intervalPath := cfg.GetBufferFlushInterval(), "buffer_flush_interval"
	if interval == nil {
		interval, intervalPath = cc.GetBufferFlushInterval(), "common_config.buffer_flush_interval"
	}
	if interval != nil {
		if s.flushEvery = interval.AsDuration(); interval.CheckValid() != nil || s.flushEvery <= 0 {
			return nil, gs, fmt.Errorf("%s: must be positive", intervalPath)
		}
	}
	size := cfg.GetBufferSizeBytes()
	if size == nil {
		size = cc.GetBufferSizeBytes()
	}
	if size != nil {
		s.maxBytes = int(size.GetValue())
	}
	for i, k := range cfg.GetFilterStateObjectsToLog() {
		if k == "" {
			return nil, gs, fmt.Errorf("filter_state_objects_to_log[%d]: must not be empty", i)
		}
		s.filterState = append(s.filterState, k)
	}
	for i, t := range cfg.GetCustomTags() {
		ct, err := accesslog.CompileCustomTag(t)
		if err != nil {
			return nil, gs, fmt.Errorf("custom_tags[%d].%w", i, err)
		}
		s.tags = append(s.tags, ct)
	}
	parsers, err := accesslog.CompileFormatters(cfg.GetFormatters(), ctx.Extensions)
	if err != nil {
		return nil, gs, err
	}
	if cfg.GetBody() != nil {
		b, err := compileValue(cfg.GetBody(), parsers)
		if err != nil {
			return nil, gs, fmt.Errorf("body.%w", err)
		}
		s.body = &b
	}
	if s.attributes, err = compileList(cfg.GetAttributes(), parsers); err != nil {
		return nil, gs, fmt.Errorf("attributes.%w", err)
	}
	detected, err := opentelemetry.DetectResource(nil, cfg.GetResourceDetectors(), ctx.Extensions)
	if err != nil {
		return nil, gs, err
	}
	s.resource = resource(cfg, s.logName, ctx.Node, detected)
	s.statPrefix = statScope(cfg.GetStatPrefix())
	return s, gs, nil
}

// checkCommon refuses what common_config may hold that this logger does
// not do; errors name the field below it.
func checkCommon(cc *grpcv3.CommonGrpcAccessLogConfig) error {
	//lint:ignore SA1019 the deprecated V2 value is refused by name
	if cc.GetTransportApiVersion() == corev3.ApiVersion_V2 {
		return errors.New("transport_api_version: V2 is not supported (use V3)")
	}
	if cc.GetGrpcStreamRetryPolicy() != nil {
		return errors.New("grpc_stream_retry_policy: not supported by Outrigger")
	}
	// Envoy's logger reads only the top-level fields of these two.
	if len(cc.GetFilterStateObjectsToLog()) > 0 {
		return errors.New("filter_state_objects_to_log: not read by the OpenTelemetry access logger (Envoy ignores it): use the top-level filter_state_objects_to_log")
	}
	if len(cc.GetCustomTags()) > 0 {
		return errors.New("custom_tags: not read by the OpenTelemetry access logger (Envoy ignores it): use the top-level custom_tags")
	}
	return nil
}

// resource is the attributes of the logs' OTLP resource, as Envoy makes
// them: the built-in labels (log_name, zone_name, cluster_name,
// node_name) unless disabled, then those the resource detectors found,
// then resource_attributes, a key given again replacing the earlier value
// in place.
func resource(cfg *otelv3.OpenTelemetryAccessLogConfig, logName string, node *corev3.Node, detected []tracing.Tag) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	index := map[string]int{}
	add := func(kv *commonpb.KeyValue) {
		if i, ok := index[kv.GetKey()]; ok {
			out[i] = kv
			return
		}
		index[kv.GetKey()] = len(out)
		out = append(out, kv)
	}
	if !cfg.GetDisableBuiltinLabels() {
		add(&commonpb.KeyValue{Key: "log_name", Value: stringAny(logName)})
		add(&commonpb.KeyValue{Key: "zone_name", Value: stringAny(node.GetLocality().GetZone())})
		add(&commonpb.KeyValue{Key: "cluster_name", Value: stringAny(node.GetCluster())})
		add(&commonpb.KeyValue{Key: "node_name", Value: stringAny(node.GetId())})
	}
	for _, t := range detected {
		add(&commonpb.KeyValue{Key: t.Key, Value: stringAny(t.Value)})
	}
	for _, kv := range cfg.GetResourceAttributes().GetValues() {
		add(proto.Clone(kv).(*commonpb.KeyValue))
	}
	return out
}

// statScope is where the counters of a logger with stat_prefix p are:
// below statRoot, and below p when set, as Envoy joins them.
func statScope(p string) string {
	if p == "" || strings.HasSuffix(p, ".") {
		return statRoot + p
	}
	return statRoot + p + "."
}
