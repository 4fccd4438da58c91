package tracing

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// HTTPCallSpan is the span of an HTTP request a filter sends for a traced
// request through what stands for Envoy's asynchronous HTTP client
// (ext_authz's http_service check). Envoy's client given the request's
// span as parent starts a client child span under it, named by its
// caller ("async <cluster> egress" by default), keeps the parent's
// sampling, writes the child's context into the request's headers, and
// finishes the span with the tags of an upstream span
// (HttpTracerUtility::finalizeUpstreamSpan). Without emit_client_span the
// request has no span and carries the request span's context instead, so
// that the service's spans still join the trace.
//
// An HTTPCallSpan is started on the request's goroutine (it reads the
// parent's context) and may be finished on another; nil is the span of
// an untraced request, which does nothing.
type HTTPCallSpan struct {
	// span is nil once ended (or without emit_client_span): Finish and
	// Cancel may race, and the first ends it.
	span atomic.Pointer[Span]
	// header is the trace context the request carries.
	header  http.Header
	cluster string
}

// HTTPCallResult is what an HTTP call's span is finished with.
type HTTPCallResult struct {
	// Status is the response's status, 0 when none came (the request
	// failed or was reset).
	Status int
	// Flags are Envoy's response flags of the call ("" stands for "-").
	Flags string
	// Address is the upstream host's address ("127.0.0.1:8080"), "" when
	// no host was chosen.
	Address string
}

// StartHTTPCallSpan starts the span of an HTTP request to cluster, named
// name, as a child of parent, or returns a span that only propagates
// parent's context when emit is false. It returns nil when parent is nil
// (an untraced request).
func StartHTTPCallSpan(parent *Span, emit bool, name, cluster string, start time.Time) *HTTPCallSpan {
	if parent == nil {
		return nil
	}
	c := &HTTPCallSpan{header: http.Header{}, cluster: cluster}
	if !emit {
		parent.Inject(httpHeaderSetter(c.header))
		return c
	}
	sp := parent.Child(name, start)
	sp.Inject(httpHeaderSetter(c.header))
	c.span.Store(sp)
	return c
}

// Header is the trace context the request carries, in canonical form:
// nil when it has none.
func (c *HTTPCallSpan) Header() http.Header {
	if c == nil {
		return nil
	}
	return c.header
}

// Recording reports that the call has a sampled span, whose tags its
// caller may want to gather (the upstream's address).
func (c *HTTPCallSpan) Recording() bool {
	if c == nil {
		return false
	}
	sp := c.span.Load()
	return sp != nil && sp.Sampled
}

// SetTag tags the call's span (the caller's own tags, set before the
// upstream ones, as Envoy's onBeforeFinalizeUpstreamSpan), from the
// goroutine that ends it, before it does.
func (c *HTTPCallSpan) SetTag(key, value string) {
	if c == nil {
		return
	}
	if sp := c.span.Load(); sp != nil && sp.Sampled {
		sp.SetTag(key, value)
	}
}

// Finish ends the call's span at end with the tags Envoy's asynchronous
// client gives an upstream span: http.protocol (its stream's protocol is
// always HTTP/1.1), upstream_address and peer.address when a host was
// chosen, component, upstream_cluster and upstream_cluster.name, the
// status ("0" without a response), response_flags, and error=true when
// there was no response or it was a 5xx. The span must not be used
// afterwards.
func (c *HTTPCallSpan) Finish(r HTTPCallResult, end time.Time) {
	if sp := c.take(); sp != nil {
		c.finish(sp, r, end)
	}
}

// finish tags and ends sp, the call's span, taken.
func (c *HTTPCallSpan) finish(sp *Span, r HTTPCallResult, end time.Time) {
	if sp.Sampled {
		sp.SetTag("http.protocol", "HTTP/1.1")
		if r.Address != "" {
			sp.SetTag(tagUpstreamAddress, r.Address)
			sp.SetTag("peer.address", r.Address)
		}
		sp.SetTag(tagComponent, "proxy")
		sp.SetTag(tagUpstreamCluster, c.cluster)
		sp.SetTag("upstream_cluster.name", c.cluster)
		sp.SetTag("http.status_code", strconv.Itoa(r.Status))
		flags := r.Flags
		if flags == "" {
			flags = "-"
		}
		sp.SetTag("response_flags", flags)
		if r.Status == 0 || (r.Status >= 500 && r.Status < 600) {
			sp.SetTag(tagError, "true")
		}
	}
	sp.Finish(end)
}

// Cancel ends the span of a call its caller gave up (the request went
// away): tagged canceled=true, then finished without a response, as
// Envoy's client cancels and resets its stream.
func (c *HTTPCallSpan) Cancel(r HTTPCallResult, end time.Time) {
	sp := c.take()
	if sp == nil {
		return
	}
	if sp.Sampled {
		sp.SetTag("canceled", "true")
	}
	r.Status = 0
	c.finish(sp, r, end)
}

// take hands the call's span to the one caller that ends it.
func (c *HTTPCallSpan) take() *Span {
	if c == nil {
		return nil
	}
	return c.span.Swap(nil)
}

// httpHeaderSetter writes a span's context into an http.Header
// (HeaderSetter). Values are copied: a propagator's may view its span's
// scratch buffer, which the request outlives.
type httpHeaderSetter http.Header

// Set implements HeaderSetter.
func (h httpHeaderSetter) Set(name, value string) {
	http.Header(h).Set(name, string([]byte(value)))
}

// Del implements HeaderSetter.
func (h httpHeaderSetter) Del(name string) { http.Header(h).Del(name) }
