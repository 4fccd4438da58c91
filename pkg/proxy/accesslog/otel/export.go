package otel

import (
	"context"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// exporter sends export requests to the collector, one at a time.
type exporter interface {
	// export sends req and returns how many records the collector
	// rejected (a partial success).
	export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (rejected int64, err error)
	// target names the collector in logs.
	target() string
	// hasTimeout reports whether the configuration bounds each export.
	hasTimeout() bool
	close() error
}

// grpcExporter calls LogsService/Export on a gRPC service.
type grpcExporter struct{ ch *grpcservice.Channel }

func (e grpcExporter) export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (int64, error) {
	// The channel applies grpc_service's timeout and initial metadata.
	ctx, cancel := e.ch.CallContext(ctx, false)
	defer cancel()
	resp, err := collogspb.NewLogsServiceClient(e.ch.Conn()).Export(ctx, req)
	if err != nil {
		return 0, err
	}
	return resp.GetPartialSuccess().GetRejectedLogRecords(), nil
}

func (e grpcExporter) target() string { return e.ch.Target }

func (e grpcExporter) hasTimeout() bool {
	ctx, cancel := e.ch.CallContext(context.Background(), false)
	defer cancel()
	_, ok := ctx.Deadline()
	return ok
}

func (e grpcExporter) close() error { return e.ch.Close() }

// httpExporter posts OTLP/HTTP protobuf requests through a cluster. As
// in Envoy, the answer's body is not read for a partial success: a 2xx
// status accepts every record.
type httpExporter struct {
	p    *tracing.Poster
	name string
	// buf is the last request, reused: the poster writes the body before
	// Post returns and keeps no reference to it.
	buf []byte
}

func (e *httpExporter) export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (int64, error) {
	var err error
	if e.buf, err = (proto.MarshalOptions{}).MarshalAppend(e.buf[:0], req); err != nil {
		return 0, err
	}
	return 0, e.p.Post(ctx, "application/x-protobuf", e.buf)
}

func (e *httpExporter) target() string { return e.name }

// hasTimeout: http_uri's timeout is required (Envoy's validation).
func (e *httpExporter) hasTimeout() bool { return true }

func (e *httpExporter) close() error {
	e.p.Close()
	return nil
}
