package opentelemetry

import (
	"context"
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	"google.golang.org/grpc"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// exportMethod is the OTLP trace service's Export method.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// resource is the attributes of the OTLP resource of every span, before
// the resource detectors': service.name, unless
// set_service_name_resource_attribute is false, and Envoy's
// telemetry.sdk.* attributes unless set_telemetry_sdk_resource_attributes
// is false (both default to true, as in Envoy). The SDK's name is Envoy's,
// the tracer Outrigger implements; its language is Outrigger's own, and
// its version the proxy's build version (Envoy's VersionInfo::version()).
func resource(cfg *tracev3.OpenTelemetryConfig, version string) []tracing.Tag {
	var res []tracing.Tag
	if v := cfg.GetSetServiceNameResourceAttribute(); v == nil || v.GetValue() {
		name := cfg.GetServiceName()
		if name == "" {
			name = defaultServiceName
		}
		res = append(res, tracing.Tag{Key: "service.name", Value: name})
	}
	if v := cfg.GetSetTelemetrySdkResourceAttributes(); v == nil || v.GetValue() {
		res = append(res,
			tracing.Tag{Key: "telemetry.sdk.language", Value: sdkLanguage},
			tracing.Tag{Key: "telemetry.sdk.name", Value: sdkName},
			tracing.Tag{Key: "telemetry.sdk.version", Value: version})
	}
	return res
}

// rawRequest is an export request already in its wire form.
type rawRequest struct{ b []byte }

// rawCodec sends rawRequests as they are and drops the response (a partial
// success is not acted on, as in Envoy).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	r, ok := v.(*rawRequest)
	if !ok {
		return nil, fmt.Errorf("rawCodec cannot marshal %T", v)
	}
	return r.b, nil
}

func (rawCodec) Unmarshal([]byte, any) error { return nil }

// Name is the content subtype of protobuf, which the request is.
func (rawCodec) Name() string { return "proto" }

// grpcExporter calls TraceService/Export.
type grpcExporter struct {
	ch   *grpcservice.Channel
	head requestHead
	enc  encoder
}

// newGRPCExporter opens the collector's channel.
func newGRPCExporter(gs *corev3.GrpcService, head requestHead, ctx tracing.Context) (*grpcExporter, string, error) {
	if ctx.OpenGRPC == nil {
		return nil, "", errors.New("envoy_grpc: gRPC services are not available here")
	}
	ch, err := ctx.OpenGRPC(gs)
	if err != nil {
		return nil, "", err
	}
	return &grpcExporter{ch: ch, head: head}, ch.Target, nil
}

// Export implements tracing.Exporter.
func (e *grpcExporter) Export(ctx context.Context, spans []*tracing.Span) error {
	// A new buffer each time, of the request's size: gRPC may still hold
	// the last one after a failed call returns.
	return e.send(ctx, e.enc.appendRequest(nil, e.head, spans))
}

// ExportEncoded implements tracing.EncodedExporter.
func (e *grpcExporter) ExportEncoded(ctx context.Context, enc []byte, _ int) error {
	return e.send(ctx, appendEncodedRequest(nil, e.head, enc))
}

// send calls Export with the request b.
func (e *grpcExporter) send(ctx context.Context, b []byte) error {
	if d, ok := ctx.Deadline(); ok {
		// The batcher's context carries the export's deadline without
		// a timer: gRPC ends a call when its context is done.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	cctx, cancel := e.ch.CallContext(ctx, false)
	defer cancel()
	var resp struct{}
	return e.ch.Conn().Invoke(cctx, exportMethod, &rawRequest{b: b}, &resp, grpc.ForceCodec(rawCodec{}))
}

var (
	_ tracing.EncodedExporter = (*grpcExporter)(nil)
	_ tracing.EncodedExporter = (*httpExporter)(nil)
)

// Close closes the channel.
func (e *grpcExporter) Close() error { return e.ch.Close() }

// httpExporter posts OTLP/HTTP protobuf requests.
type httpExporter struct {
	p    *tracing.Poster
	head requestHead
	enc  encoder
	// buf is the last request, reused: the poster writes the body before
	// Post returns and keeps no reference to it.
	buf []byte
}

// newHTTPExporter checks an HttpService (see tracing.CompileHTTPService);
// requests go to /v1/traces unless http_uri's uri names a path.
func newHTTPExporter(hs *corev3.HttpService, head requestHead, ctx tracing.Context) (*httpExporter, string, error) {
	p, target, err := tracing.CompileHTTPService(hs, ctx.Cluster, "/v1/traces")
	if err != nil {
		return nil, "", err
	}
	return &httpExporter{p: p, head: head}, target, nil
}

// Export implements tracing.Exporter.
func (e *httpExporter) Export(ctx context.Context, spans []*tracing.Span) error {
	e.buf = e.enc.appendRequest(e.buf[:0], e.head, spans)
	return e.p.Post(ctx, "application/x-protobuf", e.buf)
}

// ExportEncoded implements tracing.EncodedExporter: the request's head
// (appendEncodedRequest's, up to the spans) is written apart, and the
// spans are sent from enc as they are, not copied behind it: a copy of
// every span's bytes per export.
func (e *httpExporter) ExportEncoded(ctx context.Context, enc []byte, _ int) error {
	e.buf = appendScopeSpans(e.buf[:0], e.head, len(enc))
	return e.p.PostParts(ctx, "application/x-protobuf", e.buf, enc)
}

// Close closes the idle connections.
func (e *httpExporter) Close() error {
	e.p.Close()
	return nil
}
