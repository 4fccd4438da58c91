package opentelemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

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

// newHTTPExporter checks an HttpService: http_uri's uri (its host is the
// :authority, its path the request path), cluster and timeout (each
// export's, within the tracer's own), and request_headers_to_add.
func newHTTPExporter(hs *corev3.HttpService, res []tracing.Tag, ctx tracing.Context) (*httpExporter, string, error) {
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
