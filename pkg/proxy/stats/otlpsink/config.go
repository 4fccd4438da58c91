package otlpsink

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	sinkv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/stat_sinks/open_telemetry/v3"
	"github.com/go-logr/logr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
)

// Deps are what the sink needs from the server.
type Deps struct {
	// OpenGRPC opens a grpc_service's channel; nil refuses grpc_service.
	OpenGRPC func(gs *corev3.GrpcService) (*grpcservice.Channel, error)
	// Cluster finds a cluster by name, for http_service; nil refuses it.
	Cluster func(name string) grpcservice.Cluster
	// Extensions resolves resource_detectors.
	Extensions *extension.Registry
	// Log receives export failures (at debug level, as Envoy logs them).
	Log logr.Logger
}

// defaultServiceName is the service.name of the resource when no
// detector sets one, as Envoy's resource provider names an unnamed
// service.
const defaultServiceName = "unknown_service:envoy"

// New builds the sink of a SinkConfig. Errors name the field below it.
func New(cfg *sinkv3.SinkConfig, deps Deps) (*Sink, error) {
	if cfg.GetCustomMetricConversions() != nil {
		return nil, errors.New("custom_metric_conversions: not supported by Outrigger")
	}
	opts := options{
		countersAsDeltas:   cfg.GetReportCountersAsDeltas(),
		histogramsAsDeltas: cfg.GetReportHistogramsAsDeltas(),
		tagsAsAttributes:   cfg.GetEmitTagsAsAttributes() == nil || cfg.GetEmitTagsAsAttributes().GetValue(),
		tagExtractedName:   cfg.GetUseTagExtractedName() == nil || cfg.GetUseTagExtractedName().GetValue(),
		maxPoints:          int(cfg.GetMaxDataPointsPerRequest()),
	}
	if p := cfg.GetPrefix(); p != "" {
		opts.prefix = p + "."
	}
	res, err := opentelemetry.DetectResource([]tracing.Tag{{Key: "service.name", Value: defaultServiceName}}, cfg.GetResourceDetectors(), deps.Extensions)
	if err != nil {
		return nil, err
	}
	opts.resource = &resourcepb.Resource{}
	for _, a := range res {
		opts.resource.Attributes = append(opts.resource.Attributes, &commonpb.KeyValue{
			Key: a.Key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: a.Value}},
		})
	}
	var exp exporter
	switch {
	case cfg.GetGrpcService() != nil:
		if deps.OpenGRPC == nil {
			return nil, errors.New("grpc_service: gRPC services are not available here")
		}
		ch, err := deps.OpenGRPC(cfg.GetGrpcService())
		if err != nil {
			return nil, fmt.Errorf("grpc_service.%w", err)
		}
		exp = grpcExporter{ch: ch}
	case cfg.GetHttpService() != nil:
		p, target, err := tracing.CompileHTTPService(cfg.GetHttpService(), deps.Cluster, "/v1/metrics")
		if err != nil {
			return nil, fmt.Errorf("http_service.%w", err)
		}
		exp = httpExporter{p: p, name: target}
	default:
		return nil, errors.New("protocol_specifier: one of grpc_service or http_service is required")
	}
	return newSink(opts, exp, deps.Log), nil
}
