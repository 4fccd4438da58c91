package httpconn

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// bodyFactory builds a test filter that buffers the request body with
// the limit of the request's x-limit header (x-partial: partial), waits
// for a goroutine of its own (Wait), and tells the upstream what it saw:
// x-seen-body, x-complete and x-headers (the request header names it
// listed).
type bodyFactory struct{}

func (bodyFactory) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return bodyConfig{}, nil
}

type bodyConfig struct{}

func (bodyConfig) NewFilter() httpfilter.Filter { return bodyFilter{} }

type bodyFilter struct{}

func (bodyFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.RequestHeaders()
	var names []string
	s.RangeRequestHeaders(func(name, _ string) bool {
		if strings.HasPrefix(name, "x-") {
			names = append(names, name)
		}
		return true
	})
	done := make(chan struct{})
	if _, ok := h.Get("x-wait-forever"); ok {
		// Nothing closes done: the stream's timeout must end the wait.
		if s.Wait(done) {
			panic("a wait on a channel never closed returned true")
		}
		return httpfilter.Stop
	}
	go func() {
		time.Sleep(time.Millisecond)
		close(done)
	}()
	if !s.Wait(done) {
		return httpfilter.Stop
	}
	if l, ok := h.Get("x-limit"); ok {
		limit, _ := strconv.Atoi(l)
		_, partial := h.Get("x-partial")
		body, complete, ok := s.BufferRequestBody(limit, partial)
		if !ok {
			return httpfilter.Stop
		}
		h.Set("x-seen-body", string(body))
		h.Set("x-complete", strconv.FormatBool(complete))
	}
	h.Set("x-headers", strings.Join(names, ","))
	return httpfilter.Continue
}

// TestBufferRequestBody checks that a filter can hold the request body
// and the router still forwards all of it, over HTTP/1.1 and HTTP/2, and
// that a body over the limit is answered 413 as Envoy's buffer limit
// answers it.
func TestBufferRequestBody(t *testing.T) {
	reg, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of("proxy.filters.http.body", httpFiltersCategory, &wrapperspb.BoolValue{}, bodyFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	up := echoUpstream(t)
	h2up := h2cUpstream(t)
	st := stats.NewStore()
	ups := fakeUpstreams{"h1": newFakeCluster(st, "h1", false, hostOf(up)), "h2": newFakeCluster(st, "h2", true, hostOf(h2up))}
	cfg := hcm(routeConfig(clusterRoute("/h2", "h2"), clusterRoute("/", "h1")), filter("body", wrapperspb.Bool(true)))
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Extensions: reg})

	body := "0123456789abcdefghij"
	tests := map[string]struct {
		path, limit string
		partial     bool
		status      int
		seen        string
		complete    string
	}{
		"the whole body, under the limit":    {path: "/", limit: "100", status: 200, seen: body, complete: "true"},
		"the whole body, HTTP/2 upstream":    {path: "/h2", limit: "100", status: 200, seen: body, complete: "true"},
		"over the limit":                     {path: "/", limit: "4", status: 413},
		"over the limit, partial":            {path: "/", limit: "4", partial: true, status: 200},
		"over the limit, partial, HTTP/2 up": {path: "/h2", limit: "4", partial: true, status: 200},
		"exactly the limit":                  {path: "/", limit: "20", status: 200, seen: body, complete: "true"},
	}
	for name, tc := range tests {
		for cname, c := range map[string]func() *http.Client{"HTTP/1.1": client, "HTTP/2": h2cClient} {
			t.Run(name+", "+cname+" client", func(t *testing.T) {
				hdr := map[string]string{"x-limit": tc.limit}
				if tc.partial {
					hdr["x-partial"] = "1"
				}
				status, _, got := do(t, c(), "POST", p.url(tc.path), strings.NewReader(body), hdr)
				if status != tc.status {
					t.Fatalf("status %d, want %d: %s", status, tc.status, got)
				}
				if status == 413 {
					if got != "Payload Too Large" {
						t.Errorf("body %q", got)
					}
					return
				}
				if !strings.HasSuffix(got, "\n\n"+body) {
					t.Errorf("the upstream did not get the whole body:\n%s", got)
				}
				if !strings.Contains(got, "x-headers: ") || !strings.Contains(got[strings.Index(got, "x-headers: "):], "x-limit") {
					t.Errorf("the filter did not list the request headers:\n%s", got)
				}
				if tc.seen != "" && !strings.Contains(got, "x-seen-body: "+tc.seen+"\n") {
					t.Errorf("the filter saw another body:\n%s", got)
				}
				if tc.partial && !strings.Contains(got, "x-seen-body: 0123") {
					t.Errorf("the filter saw no partial body:\n%s", got)
				}
				if tc.complete != "" && !strings.Contains(got, "x-complete: "+tc.complete+"\n") {
					t.Errorf("complete is not %s:\n%s", tc.complete, got)
				}
			})
		}
	}
	if n := p.counter("http.test.downstream_rq_too_large"); n != 2 {
		t.Errorf("downstream_rq_too_large = %d, want 2", n)
	}
	// A request without a body: nothing to buffer.
	status, _, got := do(t, client(), "GET", p.url("/"), nil, map[string]string{"x-limit": "4"})
	if status != 200 || !strings.Contains(got, "x-complete: true\n") {
		t.Errorf("GET: %d %s", status, got)
	}
}

// TestWaitTimesOut checks that a filter waiting for a service that never
// answers is cut by the stream idle timeout, answered 408 as Envoy's
// timer answers it.
func TestWaitTimesOut(t *testing.T) {
	reg, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of("proxy.filters.http.body", httpFiltersCategory, &wrapperspb.BoolValue{}, bodyFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hcm(routeConfig(directRoute("/", 200, "ok")), filter("body", wrapperspb.Bool(true)))
	cfg.StreamIdleTimeout = durationpb.New(300 * time.Millisecond)
	p := startProxy(t, cfg, Deps{Extensions: reg})
	// Over HTTP/2, the 408 is the first write in longer than the
	// timeout: the connection's write deadline must have moved.
	for cname, c := range map[string]func() *http.Client{"HTTP/1.1": client, "HTTP/2": h2cClient} {
		t.Run(cname, func(t *testing.T) {
			status, _, got := do(t, c(), "GET", p.url("/"), nil, map[string]string{"x-wait-forever": "1"})
			if status != 408 || got != "stream timeout" {
				t.Errorf("%d %q, want 408 stream timeout", status, got)
			}
		})
	}
	if n := p.counter("http.test.downstream_rq_idle_timeout"); n != 2 {
		t.Errorf("downstream_rq_idle_timeout = %d, want 2", n)
	}
}
