package metricsservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	metricssvc "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// closeGrace is how long Close lets the last flush's messages go out
// before it gives up on the service.
const closeGrace = 2 * time.Second

// Deps are what the sink needs from the server.
type Deps struct {
	// OpenGRPC opens the grpc_service's channel.
	OpenGRPC func(gs *corev3.GrpcService) (*grpcservice.Channel, error)
	// Node identifies the proxy in a stream's first message.
	Node *corev3.Node
	// Log receives stream failures (at debug level, as Envoy logs them).
	Log logr.Logger
}

// Sink streams each flush's stats. Flush converts the snapshot (only valid
// during the call) and queues the messages on a stats.Sender, whose
// goroutine owns the stream.
type Sink struct {
	conv   converter
	batch  int
	ch     *grpcservice.Channel
	node   *corev3.Node
	log    logr.Logger
	sender *stats.Sender[*metricssvc.StreamMetricsMessage]

	// The stream, used on the sender's goroutine only; nil until the next
	// flush opens it (again, after a failure).
	stream metricssvc.MetricsService_StreamMetricsClient
	cancel context.CancelFunc
}

// New builds the sink of a MetricsServiceConfig. Errors name the field
// below it.
func New(c *metricsv3.MetricsServiceConfig, deps Deps) (*Sink, error) {
	if v := c.GetTransportApiVersion(); v != corev3.ApiVersion_V3 {
		return nil, fmt.Errorf("transport_api_version: %s is not supported; the V2 (and AUTO) transport protocol versions are deprecated: set V3", v)
	}
	if c.GetGrpcService() == nil {
		return nil, errors.New("grpc_service: required")
	}
	if deps.OpenGRPC == nil {
		return nil, errors.New("grpc_service: gRPC services are not available here")
	}
	ch, err := deps.OpenGRPC(c.GetGrpcService())
	if err != nil {
		return nil, fmt.Errorf("grpc_service.%w", err)
	}
	s := &Sink{conv: converter{opts: newOptions(c)}, batch: int(c.GetBatchSize()), ch: ch, node: deps.Node, log: deps.Log}
	s.sender = stats.NewSender(s.send)
	return s, nil
}

// Flush implements stats.Sink.
func (s *Sink) Flush(sn *stats.Snapshot) error {
	if s.sender.Queue(s.messages(s.conv.convert(sn))) {
		s.log.V(1).Info("dropped a metrics service message: the previous flush was still being sent", "service", s.ch.Target)
	}
	return nil
}

// messages puts the families into messages of at most batch_size
// families each (all in one without it).
func (s *Sink) messages(fams []*dto.MetricFamily) []*metricssvc.StreamMetricsMessage {
	size := len(fams)
	if s.batch > 0 {
		size = s.batch
	}
	if size == 0 {
		return []*metricssvc.StreamMetricsMessage{{}}
	}
	var out []*metricssvc.StreamMetricsMessage
	for len(fams) > 0 {
		n := min(size, len(fams))
		out = append(out, &metricssvc.StreamMetricsMessage{EnvoyMetrics: fams[:n:n]})
		fams = fams[n:]
	}
	return out
}

// send writes a flush's messages on the stream, opening it first when
// there is none: its first message carries the node, as Envoy sends the
// identifier only when a stream starts. A failed write drops the stream
// (and the flush); the next flush opens another.
func (s *Sink) send(ctx context.Context, msgs []*metricssvc.StreamMetricsMessage) {
	for _, m := range msgs {
		if s.stream == nil {
			sctx, cancel := s.ch.CallContext(ctx, true)
			st, err := metricssvc.NewMetricsServiceClient(s.ch.Conn()).StreamMetrics(sctx)
			if err != nil {
				cancel()
				s.log.V(1).Info("metrics service stream failed to start", "service", s.ch.Target, "error", err.Error())
				return
			}
			s.stream, s.cancel = st, cancel
			m.Identifier = &metricssvc.StreamMetricsMessage_Identifier{Node: s.node}
		}
		if err := s.stream.Send(m); err != nil {
			s.log.V(1).Info("metrics service stream closed", "service", s.ch.Target, "error", err.Error())
			s.cancel()
			s.stream, s.cancel = nil, nil
			return
		}
	}
}

// Close sends what the last flush left (the server's final flush), ends
// the stream and closes the channel; a service that does not take the
// messages holds it for at most closeGrace.
func (s *Sink) Close() error {
	s.sender.Close(closeGrace)
	if s.stream != nil {
		// Half-close and wait for the service's answer, so the last
		// messages are on the wire before the stream is cancelled.
		done := make(chan struct{})
		go func() {
			_, _ = s.stream.CloseAndRecv()
			close(done)
		}()
		t := time.NewTimer(closeGrace)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		s.cancel()
		<-done
	}
	return s.ch.Close()
}
