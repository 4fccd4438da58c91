package otlpsink

import (
	"context"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// exporter sends one export request to the collector.
type exporter interface {
	// export sends req and returns how many data points the collector
	// rejected (a partial success).
	export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest) (rejected int64, err error)
	// target names the collector in logs.
	target() string
	close() error
}

// grpcExporter calls MetricsService/Export on a gRPC service.
type grpcExporter struct{ ch *grpcservice.Channel }

func (e grpcExporter) export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest) (int64, error) {
	// The channel applies grpc_service's timeout and initial metadata.
	ctx, cancel := e.ch.CallContext(ctx, false)
	defer cancel()
	resp, err := colmetricspb.NewMetricsServiceClient(e.ch.Conn()).Export(ctx, req)
	if err != nil {
		return 0, err
	}
	return resp.GetPartialSuccess().GetRejectedDataPoints(), nil
}

func (e grpcExporter) target() string { return e.ch.Target }

func (e grpcExporter) close() error { return e.ch.Close() }

// httpExporter posts OTLP/HTTP protobuf requests through a cluster. The
// response body is not read: Envoy only logs a failed status.
type httpExporter struct {
	p    *tracing.Poster
	name string
}

func (e httpExporter) export(ctx context.Context, req *colmetricspb.ExportMetricsServiceRequest) (int64, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return 0, err
	}
	return 0, e.p.Post(ctx, "application/x-protobuf", b)
}

func (e httpExporter) target() string { return e.name }

func (e httpExporter) close() error {
	e.p.Close()
	return nil
}
