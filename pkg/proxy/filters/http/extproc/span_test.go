package extproc

import (
	"sync"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// spanRecorder keeps the spans reported.
type spanRecorder struct {
	mu    sync.Mutex
	spans []*tracing.Span
}

func (r *spanRecorder) Report(s *tracing.Span) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, s)
}

func (r *spanRecorder) reported() []*tracing.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracing.Span(nil), r.spans...)
}

// idHeader writes the span's id into "x-span".
type idHeader struct{}

func (idHeader) Inject(s *tracing.Span, h tracing.HeaderSetter) { h.Set("x-span", s.ID.Hex()) }

// tracedStream is a test stream whose request has a span.
type tracedStream struct {
	*httpfiltertest.Stream
	span *tracing.Span
}

func (s tracedStream) ActiveSpan() *tracing.Span { return s.span }

var _ httpfilter.SpanSource = tracedStream{}

// TestStreamSpan: the processor's stream of a traced request carries the
// context of a child span, reported when the stream ends, unless
// emit_client_span (the filter's, or the route's overriding it) is false:
// the stream then carries the request span's own.
func TestStreamSpan(t *testing.T) {
	seen := make(chan string, 4)
	script := func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		md, _ := metadata.FromIncomingContext(srv.Context())
		seen <- md.Get("x-span")[0]
		if _, err := srv.Recv(); err != nil {
			return err
		}
		return srv.Send(headersAnswer(nil))
	}
	for _, tc := range []struct {
		name        string
		filter      *bool
		route       *bool
		wantOwnSpan bool
	}{
		{"default", nil, nil, true},
		{"filter off", ptr(false), nil, false},
		{"route off", nil, ptr(false), false},
		{"route on over filter off", ptr(false), ptr(true), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := startScripted(t, script, func(p *extprocv3.ExternalProcessor) {
				if tc.filter != nil {
					p.EmitClientSpan = wrapperspb.Bool(*tc.filter)
				}
			})
			var rec spanRecorder
			parent := tracing.NewSpan(&rec, idHeader{})
			parent.Trace, parent.ID, parent.Sampled = tracing.NewTraceID(false), tracing.NewSpanID(), true
			s := tracedStream{Stream: decodeStream(), span: parent}
			if tc.route != nil {
				s.PerRoute = map[string][]httpfilter.RouteConfig{c.name: compileRoutes(t,
					overrides(&extprocv3.ExtProcOverrides{EmitClientSpan: wrapperspb.Bool(*tc.route)}))}
			}
			f := c.NewFilter().(*filter)
			if st := f.DecodeHeaders(s); st != httpfilter.Continue {
				t.Fatalf("status %v", st)
			}
			f.OnDestroy()
			got := <-seen
			spans := rec.reported()
			if !tc.wantOwnSpan {
				if got != parent.ID.Hex() || len(spans) != 0 {
					t.Fatalf("stream carried %s and %d spans were reported; want the request's %s and none", got, len(spans), parent.ID.Hex())
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans reported, want the stream's", len(spans))
			}
			sp := spans[0]
			if got != sp.ID.Hex() || sp.Parent != parent.ID || sp.Trace != parent.Trace ||
				sp.Name != "async envoy.service.ext_proc.v3.ExternalProcessor.Process egress" {
				t.Errorf("stream carried %s; span %q id %s parent %s", got, sp.Name, sp.ID.Hex(), sp.Parent.Hex())
			}
			if v, _ := sp.Tag("upstream_cluster"); v == "" {
				t.Error("no upstream_cluster tag")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
