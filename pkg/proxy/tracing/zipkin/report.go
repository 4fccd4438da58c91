package zipkin

import (
	"context"
	"encoding/json"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// jsonSpan is a span in Zipkin's JSON v2 format.
type jsonSpan struct {
	TraceID       string            `json:"traceId"`
	ParentID      string            `json:"parentId,omitempty"`
	ID            string            `json:"id"`
	Kind          string            `json:"kind"`
	Name          string            `json:"name"`
	Timestamp     int64             `json:"timestamp"`
	Duration      int64             `json:"duration"`
	LocalEndpoint endpoint          `json:"localEndpoint"`
	Annotations   []annotation      `json:"annotations,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	Shared        bool              `json:"shared,omitempty"`
}

// annotation is a timestamped event: how Zipkin reports a span's logs
// (tracing.verbose), as Envoy's Zipkin tracer does.
type annotation struct {
	Timestamp int64  `json:"timestamp"`
	Value     string `json:"value"`
}

// endpoint is a Zipkin endpoint: the proxy, named by the node's cluster.
type endpoint struct {
	ServiceName string `json:"serviceName"`
}

// exporter posts batches as a JSON v2 list.
type exporter struct {
	p       *tracing.Poster
	service string
}

// Export implements tracing.Exporter.
func (e *exporter) Export(ctx context.Context, spans []*tracing.Span) error {
	out := make([]jsonSpan, len(spans))
	for i, s := range spans {
		js := jsonSpan{
			TraceID:       traceIDHex(s.Trace),
			ID:            s.ID.Hex(),
			Kind:          "SERVER",
			Name:          s.Name,
			Timestamp:     s.Start.UnixMicro(),
			Duration:      s.End.Sub(s.Start).Microseconds(),
			LocalEndpoint: endpoint{ServiceName: e.service},
			Shared:        s.Shared,
		}
		if s.Kind == tracing.Client {
			js.Kind = "CLIENT"
		}
		if !s.Parent.IsZero() {
			js.ParentID = s.Parent.Hex()
		}
		for _, l := range s.Logs {
			js.Annotations = append(js.Annotations, annotation{Timestamp: l.Time.UnixMicro(), Value: l.Event})
		}
		if len(s.Tags) > 0 {
			js.Tags = make(map[string]string, len(s.Tags))
			for _, t := range s.Tags {
				js.Tags[t.Key] = t.Value
			}
		}
		out[i] = js
	}
	body, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return e.p.Post(ctx, "application/json", body)
}
