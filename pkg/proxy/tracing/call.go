package tracing

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The tags of a call's span, as Envoy's asynchronous gRPC client names
// them.
const (
	tagUpstreamCluster = "upstream_cluster"
	tagUpstreamAddress = "upstream_address"
	tagComponent       = "component"
	tagGrpcStatusCode  = "grpc.status_code"
	tagError           = "error"
	tagStatus          = "status"
)

// CallSpan is the span of a gRPC call a filter makes for a traced request
// (ext_authz's check, ext_proc's stream): Envoy's asynchronous gRPC client
// given the request's span as parent starts a client span under it, named
// "async <service>.<method> egress", and sends its context in the call's
// metadata; it finishes the span with the call's gRPC status. Without
// emit_client_span the call has no span and carries the request span's
// context instead, so that the service's spans still join the trace.
//
// A CallSpan is started on the request's goroutine (it reads the parent's
// context) and may be finished on another; the zero value (and nil) is the
// span of an untraced call, which does nothing.
type CallSpan struct {
	// span is nil once ended (or without emit_client_span): Finish and
	// Cancel may race (a stream's end and its caller's close), and the
	// first ends it.
	span atomic.Pointer[Span]
	// md is the trace context the call sends.
	md metadata.MD
}

// StartCallSpan starts the span of a call to method (a full gRPC method
// name, "/envoy.service.auth.v3.Authorization/Check") of a service reached
// through cluster at address (grpcservice.Channel.SpanTags), as a child of
// parent, or returns a span that only propagates parent's context when
// emit is false. It returns nil when parent is nil (an untraced request).
func StartCallSpan(parent *Span, emit bool, method, cluster, address string, start time.Time) *CallSpan {
	if parent == nil {
		return nil
	}
	c := &CallSpan{md: metadata.MD{}}
	if !emit {
		parent.Inject(mdSetter(c.md))
		return c
	}
	name := strings.TrimPrefix(method, "/")
	name = "async " + strings.Replace(name, "/", ".", 1) + " egress"
	sp := parent.Child(name, start)
	if sp.Sampled {
		sp.AddConstTag(tagUpstreamCluster, cluster)
		sp.AddConstTag(tagUpstreamAddress, address)
		sp.AddConstTag(tagComponent, "proxy")
	}
	sp.Inject(mdSetter(c.md))
	c.span.Store(sp)
	return c
}

// Metadata is the trace context the call sends, for
// grpcservice.WithCallMetadata: nil when it has none.
func (c *CallSpan) Metadata() metadata.MD {
	if c == nil {
		return nil
	}
	return c.md
}

// SetTag tags the call's span (a filter's own tags: ext_authz_status),
// from the goroutine that ends it, before it does.
func (c *CallSpan) SetTag(key, value string) {
	if c == nil {
		return
	}
	if sp := c.span.Load(); sp != nil && sp.Sampled {
		sp.SetTag(key, value)
	}
}

// Finish ends the call's span at end with the call's outcome: err is nil
// for an OK status, else the call's error, whose gRPC status the span
// records with error=true, as Envoy's client at the call's close. The
// span must not be used afterwards.
func (c *CallSpan) Finish(err error, end time.Time) {
	sp := c.take()
	if sp == nil {
		return
	}
	if sp.Sampled {
		sp.SetTag(tagGrpcStatusCode, strconv.Itoa(int(status.Code(err))))
		if err != nil {
			sp.SetTag(tagError, "true")
		}
	}
	sp.Finish(end)
}

// Cancel ends the span of a call its caller gave up (the request went
// away): tagged status=canceled and no gRPC status, as Envoy's client
// tags a call it cancels.
func (c *CallSpan) Cancel(end time.Time) {
	sp := c.take()
	if sp == nil {
		return
	}
	if sp.Sampled {
		sp.SetTag(tagStatus, "canceled")
	}
	sp.Finish(end)
}

// take hands the call's span to the one caller that ends it (Finish or
// Cancel, whichever comes first); nil when there is none or it was taken.
func (c *CallSpan) take() *Span {
	if c == nil {
		return nil
	}
	return c.span.Swap(nil)
}

// mdSetter writes a span's context into gRPC metadata (HeaderSetter).
type mdSetter metadata.MD

// Set implements HeaderSetter. The value is copied: a propagator's may
// view its span's scratch buffer, which the call outlives.
func (m mdSetter) Set(name, value string) { metadata.MD(m).Set(name, strings.Clone(value)) }

// Del implements HeaderSetter.
func (m mdSetter) Del(name string) { metadata.MD(m).Delete(name) }
