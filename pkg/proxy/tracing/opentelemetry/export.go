package opentelemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// resource is the OTLP resource of every span: service.name, unless
// set_service_name_resource_attribute is false.
func resource(cfg *tracev3.OpenTelemetryConfig) *resourcepb.Resource {
	if v := cfg.GetSetServiceNameResourceAttribute(); v != nil && !v.GetValue() {
		return &resourcepb.Resource{}
	}
	name := cfg.GetServiceName()
	if name == "" {
		name = defaultServiceName
	}
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{stringAttr("service.name", name)}}
}

// stringAttr is a string attribute.
func stringAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// request is the OTLP export request of a batch.
func request(res *resourcepb.Resource, spans []*tracing.Span) *collectorpb.ExportTraceServiceRequest {
	out := make([]*tracepb.Span, len(spans))
	for i, s := range spans {
		ps := &tracepb.Span{
			TraceId:           append([]byte(nil), s.Trace[:]...),
			SpanId:            append([]byte(nil), s.ID[:]...),
			TraceState:        s.TraceState,
			Name:              s.Name,
			Kind:              tracepb.Span_SPAN_KIND_SERVER,
			StartTimeUnixNano: uint64(s.Start.UnixNano()),
			EndTimeUnixNano:   uint64(s.End.UnixNano()),
			Attributes:        make([]*commonpb.KeyValue, len(s.Tags)),
		}
		if s.Kind == tracing.Client {
			ps.Kind = tracepb.Span_SPAN_KIND_CLIENT
		}
		if !s.Parent.IsZero() {
			ps.ParentSpanId = append([]byte(nil), s.Parent[:]...)
		}
		for j, t := range s.Tags {
			ps.Attributes[j] = stringAttr(t.Key, t.Value)
		}
		out[i] = ps
	}
	return &collectorpb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   res,
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: out}},
	}}}
}

// grpcExporter calls TraceService/Export.
type grpcExporter struct {
	ch  *grpcservice.Channel
	res *resourcepb.Resource
}

// newGRPCExporter opens the collector's channel.
func newGRPCExporter(gs *corev3.GrpcService, res *resourcepb.Resource, ctx tracing.Context) (*grpcExporter, string, error) {
	if ctx.OpenGRPC == nil {
		return nil, "", errors.New("envoy_grpc: gRPC services are not available here")
	}
	ch, err := ctx.OpenGRPC(gs)
	if err != nil {
		return nil, "", err
	}
	return &grpcExporter{ch: ch, res: res}, ch.Target, nil
}

// Export implements tracing.Exporter.
func (e *grpcExporter) Export(ctx context.Context, spans []*tracing.Span) error {
	cctx, cancel := e.ch.CallContext(ctx, false)
	defer cancel()
	_, err := collectorpb.NewTraceServiceClient(e.ch.Conn()).Export(cctx, request(e.res, spans))
	return err
}

// Close closes the channel.
func (e *grpcExporter) Close() error { return e.ch.Close() }

// httpExporter posts OTLP/HTTP protobuf requests.
type httpExporter struct {
	p   *tracing.Poster
	res *resourcepb.Resource
}

// newHTTPExporter checks an HttpService: http_uri's uri (its host is the
// :authority, its path the request path), cluster and timeout (each
// export's, within the tracer's own), and request_headers_to_add.
func newHTTPExporter(hs *corev3.HttpService, res *resourcepb.Resource, ctx tracing.Context) (*httpExporter, string, error) {
	if len(hs.GetFormatters()) > 0 {
		return nil, "", errors.New("formatters: not supported by Outrigger")
	}
	hu := hs.GetHttpUri()
	if hu.GetCluster() == "" {
		return nil, "", errors.New("http_uri.cluster: must be set")
	}
	timeout := hu.GetTimeout().AsDuration()
	if hu.GetTimeout() != nil && (hu.GetTimeout().CheckValid() != nil || timeout < 0) {
		return nil, "", errors.New("http_uri.timeout: must be a valid, non-negative duration")
	}
	u, err := url.Parse(hu.GetUri())
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("http_uri.uri: %q is not an absolute URI", hu.GetUri())
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/v1/traces"
	}
	headers := http.Header{}
	for i, o := range hs.GetRequestHeadersToAdd() {
		k := o.GetHeader().GetKey()
		if k == "" {
			return nil, "", fmt.Errorf("request_headers_to_add[%d].header.key: must be set", i)
		}
		if o.GetKeepEmptyValue() || o.GetAppendAction() != corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD {
			return nil, "", fmt.Errorf("request_headers_to_add[%d]: only header is supported by Outrigger", i)
		}
		//lint:ignore SA1019 append is Envoy's deprecated field, still accepted.
		if o.GetAppend() != nil {
			return nil, "", fmt.Errorf("request_headers_to_add[%d].append: not supported by Outrigger", i)
		}
		headers.Add(k, o.GetHeader().GetValue())
	}
	var cl grpcservice.Cluster
	if ctx.Cluster != nil {
		cl = ctx.Cluster(hu.GetCluster())
	}
	if cl == nil {
		return nil, "", fmt.Errorf("http_uri.cluster: unknown cluster '%s'", hu.GetCluster())
	}
	p, err := tracing.NewPoster(cl, u.Host, path, headers, timeout)
	if err != nil {
		return nil, "", fmt.Errorf("http_uri.uri: %w", err)
	}
	return &httpExporter{p: p, res: res}, "cluster " + hu.GetCluster(), nil
}

// Export implements tracing.Exporter.
func (e *httpExporter) Export(ctx context.Context, spans []*tracing.Span) error {
	body, err := proto.Marshal(request(e.res, spans))
	if err != nil {
		return err
	}
	return e.p.Post(ctx, "application/x-protobuf", body)
}

// Close closes the idle connections.
func (e *httpExporter) Close() error {
	e.p.Close()
	return nil
}
