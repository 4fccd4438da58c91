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

// resource is the attributes of the OTLP resource of every span:
// service.name, unless set_service_name_resource_attribute is false.
func resource(cfg *tracev3.OpenTelemetryConfig) []tracing.Tag {
	if v := cfg.GetSetServiceNameResourceAttribute(); v != nil && !v.GetValue() {
		return nil
	}
	name := cfg.GetServiceName()
	if name == "" {
		name = defaultServiceName
	}
	return []tracing.Tag{{Key: "service.name", Value: name}}
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
	ch  *grpcservice.Channel
	res []tracing.Tag
	enc encoder
}

// newGRPCExporter opens the collector's channel.
func newGRPCExporter(gs *corev3.GrpcService, res []tracing.Tag, ctx tracing.Context) (*grpcExporter, string, error) {
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
	// A new buffer each time, of the request's size: gRPC may still hold
	// the last one after a failed call returns.
	return e.send(ctx, e.enc.appendRequest(nil, e.res, spans))
}

// ExportEncoded implements tracing.EncodedExporter.
func (e *grpcExporter) ExportEncoded(ctx context.Context, enc []byte, _ int) error {
	return e.send(ctx, appendEncodedRequest(nil, e.res, enc))
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
	p   *tracing.Poster
	res []tracing.Tag
	enc encoder
	// buf is the last request, reused: the poster writes the body before
	// Post returns and keeps no reference to it.
	buf []byte
}

// newHTTPExporter checks an HttpService (see tracing.CompileHTTPService);
// requests go to /v1/traces unless http_uri's uri names a path.
func newHTTPExporter(hs *corev3.HttpService, res []tracing.Tag, ctx tracing.Context) (*httpExporter, string, error) {
	p, target, err := tracing.CompileHTTPService(hs, ctx.Cluster, "/v1/traces")
	if err != nil {
		return nil, "", err
	}
	return &httpExporter{p: p, res: res}, target, nil
}

// Export implements tracing.Exporter.
func (e *httpExporter) Export(ctx context.Context, spans []*tracing.Span) error {
	e.buf = e.enc.appendRequest(e.buf[:0], e.res, spans)
	return e.p.Post(ctx, "application/x-protobuf", e.buf)
}

// ExportEncoded implements tracing.EncodedExporter.
func (e *httpExporter) ExportEncoded(ctx context.Context, enc []byte, _ int) error {
	e.buf = appendEncodedRequest(e.buf[:0], e.res, enc)
	return e.p.Post(ctx, "application/x-protobuf", e.buf)
}

// Close closes the idle connections.
func (e *httpExporter) Close() error {
	e.p.Close()
	return nil
}
