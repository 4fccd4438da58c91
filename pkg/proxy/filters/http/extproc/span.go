package extproc

import (
	"time"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// traceStream notes the request's span for the processor's stream, on
// the request's goroutine: Envoy's filter opens its gRPC stream with the
// active span as parent. A processor reached over HTTP is not traced (as
// Envoy's HTTP client for ext_proc, which has no span). Without
// emit_client_span the stream carries the request span's context, taken
// now: propagating writes the span's scratch, which only the request's
// goroutine may.
func (f *filter) traceStream(s httpfilter.Stream, emit bool) {
	if f.c.http != nil || f.svc == nil {
		return
	}
	parent := httpfilter.ActiveSpan(s)
	if parent == nil {
		return
	}
	f.span, f.emitSpan = parent, emit
	if !emit {
		f.propagate = tracing.StartCallSpan(parent, false, "", "", "", time.Time{})
	}
}

// streamSpan starts the span of the stream about to open, nil for an
// untraced request. With emit_client_span it is a child of the request's
// span, named and tagged as Envoy's asynchronous gRPC client names the
// stream's; it reads only the request span's context, which does not
// change while the filter lives.
func (f *filter) streamSpan() *tracing.CallSpan {
	if f.span == nil {
		return nil
	}
	if !f.emitSpan {
		return f.propagate
	}
	cluster, address := f.svc.ch.SpanTags()
	return tracing.StartCallSpan(f.span, true, extprocsvc.ExternalProcessor_Process_FullMethodName, cluster, address, time.Now())
}
