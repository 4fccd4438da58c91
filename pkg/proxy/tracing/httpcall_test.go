package tracing

import (
	"strings"
	"testing"
	"time"
)

// tagList is a span's tags as key=value, in order.
func tagList(s *Span) string {
	var b strings.Builder
	for i, t := range s.Tags {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.Key + "=" + t.Value)
	}
	return b.String()
}

// TestHTTPCallSpanEmitted: the call's span is a client child of the
// request's with the caller's name, its context is the request's headers,
// and it finishes with the caller's tags first and then the upstream
// tags of Envoy's asynchronous client, in that order.
func TestHTTPCallSpanEmitted(t *testing.T) {
	var rec recorder
	parent := parentSpan(&rec, true)
	start := time.Now()
	c := StartHTTPCallSpan(parent, true, "async authz egress", "authz", start)
	if !c.Recording() {
		t.Fatal("a sampled call's span does not record")
	}
	tp := c.Header().Get("Traceparent")
	c.SetTag("ext_authz_http_status", "OK")
	c.SetTag("ext_authz_status", "ext_authz_ok")
	c.Finish(HTTPCallResult{Status: 200, Address: "127.0.0.1:9000"}, start.Add(time.Millisecond))
	c.Finish(HTTPCallResult{Status: 500}, start) // ended already: no-op
	c.Cancel(HTTPCallResult{}, start)
	if len(rec.spans) != 1 {
		t.Fatalf("reported %d spans, want 1", len(rec.spans))
	}
	sp := rec.spans[0]
	if sp.Name != "async authz egress" || sp.Kind != Client || sp.Trace != parent.Trace || sp.Parent != parent.ID || sp.ID == parent.ID {
		t.Errorf("span %q kind %d trace %s parent %s id %s", sp.Name, sp.Kind, sp.Trace.Hex(), sp.Parent.Hex(), sp.ID.Hex())
	}
	if want := "00-" + sp.Trace.Hex() + "-" + sp.ID.Hex() + "-01"; tp != want {
		t.Errorf("traceparent %q, want the call span's %q", tp, want)
	}
	want := "ext_authz_http_status=OK ext_authz_status=ext_authz_ok http.protocol=HTTP/1.1 " +
		"upstream_address=127.0.0.1:9000 peer.address=127.0.0.1:9000 component=proxy upstream_cluster=authz " +
		"upstream_cluster.name=authz http.status_code=200 response_flags=-"
	if got := tagList(sp); got != want {
		t.Errorf("tags\n%s\nwant\n%s", got, want)
	}
}

// TestHTTPCallSpanFailures: a 5xx or a call without a response is an
// error; a cancelled call is tagged canceled and has no status; no host,
// no address tags.
func TestHTTPCallSpanFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		finish func(*HTTPCallSpan)
		want   string
	}{
		"timeout": {func(c *HTTPCallSpan) { c.Finish(HTTPCallResult{Status: 504, Flags: "UT", Address: "h:1"}, time.Now()) },
			"http.protocol=HTTP/1.1 upstream_address=h:1 peer.address=h:1 component=proxy upstream_cluster=authz upstream_cluster.name=authz http.status_code=504 response_flags=UT error=true"},
		"no connection": {func(c *HTTPCallSpan) { c.Finish(HTTPCallResult{Status: 503, Flags: "UF"}, time.Now()) },
			"http.protocol=HTTP/1.1 component=proxy upstream_cluster=authz upstream_cluster.name=authz http.status_code=503 response_flags=UF error=true"},
		"denied": {func(c *HTTPCallSpan) { c.Finish(HTTPCallResult{Status: 403}, time.Now()) },
			"http.protocol=HTTP/1.1 component=proxy upstream_cluster=authz upstream_cluster.name=authz http.status_code=403 response_flags=-"},
		"cancelled": {func(c *HTTPCallSpan) { c.Cancel(HTTPCallResult{Status: 503, Flags: "UC", Address: "h:1"}, time.Now()) },
			"canceled=true http.protocol=HTTP/1.1 upstream_address=h:1 peer.address=h:1 component=proxy upstream_cluster=authz upstream_cluster.name=authz http.status_code=0 response_flags=UC error=true"},
	} {
		t.Run(name, func(t *testing.T) {
			var rec recorder
			c := StartHTTPCallSpan(parentSpan(&rec, true), true, "async authz egress", "authz", time.Now())
			tc.finish(c)
			if len(rec.spans) != 1 {
				t.Fatalf("reported %d spans, want 1", len(rec.spans))
			}
			if got := tagList(rec.spans[0]); got != tc.want {
				t.Errorf("tags\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestHTTPCallSpanQuietAndUnsampled: without emit_client_span the request
// carries the parent's own context and nothing is reported; an unsampled
// parent's call has its own unsampled span, reported to no one; an
// untraced request has no span at all.
func TestHTTPCallSpanQuietAndUnsampled(t *testing.T) {
	var rec recorder
	parent := parentSpan(&rec, true)
	c := StartHTTPCallSpan(parent, false, "async authz egress", "authz", time.Now())
	if got, want := c.Header().Get("Traceparent"), "00-"+parent.Trace.Hex()+"-"+parent.ID.Hex()+"-01"; got != want {
		t.Errorf("traceparent %q, want the parent's %q", got, want)
	}
	if c.Recording() {
		t.Error("a call without its span records")
	}
	c.SetTag("k", "v")
	c.Finish(HTTPCallResult{Status: 200}, time.Now())

	unsampled := parentSpan(&rec, false)
	u := StartHTTPCallSpan(unsampled, true, "async authz egress", "authz", time.Now())
	tp := u.Header().Get("Traceparent")
	if !strings.HasPrefix(tp, "00-"+unsampled.Trace.Hex()+"-") || !strings.HasSuffix(tp, "-00") || strings.Contains(tp, unsampled.ID.Hex()) {
		t.Errorf("unsampled call's traceparent %q: want the trace, its own span id, flags 00", tp)
	}
	if u.Recording() {
		t.Error("an unsampled call's span records")
	}
	u.Finish(HTTPCallResult{Status: 200}, time.Now())
	if len(rec.spans) != 0 {
		t.Errorf("reported %d spans, want none", len(rec.spans))
	}

	var none *HTTPCallSpan
	if StartHTTPCallSpan(nil, true, "n", "c", time.Now()) != nil || none.Header() != nil || none.Recording() {
		t.Error("an untraced request's call has a span")
	}
	none.SetTag("k", "v")
	none.Finish(HTTPCallResult{}, time.Now())
	none.Cancel(HTTPCallResult{}, time.Now())
}
