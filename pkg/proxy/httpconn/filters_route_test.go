package httpconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/healthcheck"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// tagFactory builds a test filter configured with a StringValue (its tag)
// whose per-route configuration is an Int64Value: each request's response
// gets x-tag-<name> with the per-route value in force, or the filter's
// tag. A request header x-sleep-ms makes it Sleep; x-grpc-reply makes it
// answer with a gRPC status.
type tagFactory struct {
	// destroyed counts the filters whose request ended.
	destroyed *atomic.Int64
	// slept receives Sleep's answer.
	slept chan bool
}

func (f tagFactory) Compile(m proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	v, ok := m.(*wrapperspb.StringValue)
	if !ok {
		return nil, errors.New("not a StringValue")
	}
	return &tagConfig{f: f, name: ctx.Name, tag: v.GetValue()}, nil
}

func (tagFactory) CompileRoute(m proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	v := m.(*wrapperspb.Int64Value)
	if v.GetValue() < 0 {
		return nil, errors.New("value: must not be negative")
	}
	return v.GetValue(), nil
}

type tagConfig struct {
	f         tagFactory
	name, tag string
}

func (c *tagConfig) NewFilter() httpfilter.Filter { return &tagFilter{c: c} }

type tagFilter struct {
	c   *tagConfig
	val string
}

func (f *tagFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.val = f.c.tag
	// A per-route configuration may be another filter's (see
	// httpfilter.Stream.RouteConfig): only an int64 is the tag's.
	if rc, ok := s.RouteConfig(f.c.name).(int64); ok {
		f.val = strconv.FormatInt(rc, 10)
	}
	h := s.RequestHeaders()
	if ms, ok := h.Get("x-sleep-ms"); ok {
		n, _ := strconv.Atoi(ms)
		ok := s.Sleep(time.Duration(n) * time.Millisecond)
		if f.c.f.slept != nil {
			f.c.f.slept <- ok
		}
		if !ok {
			return httpfilter.Stop
		}
	}
	if _, ok := h.Get("x-grpc-reply"); ok {
		s.SendGrpcLocalReply(503, 9, "not now 100%", accesslog.FaultInjected, "test_reply")
		return httpfilter.Stop
	}
	if _, ok := h.Get("x-reply"); ok {
		s.SendLocalReply(429, "slow down", 0, "test_reply")
		return httpfilter.Stop
	}
	return httpfilter.Continue
}

func (f *tagFilter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	s.ResponseHeaders().Set("x-tag-"+f.c.name, f.val)
	return httpfilter.Continue
}

func (f *tagFilter) OnDestroy() {
	if f.c.f.destroyed != nil {
		f.c.f.destroyed.Add(1)
	}
}

// tagRegistry is a registry of the router, health_check and the tag
// filter.
func tagRegistry(t testing.TB, f tagFactory) *extension.Registry {
	t.Helper()
	r, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of(healthcheck.Name, httpFiltersCategory, &healthcheckv3.HealthCheck{}, healthcheck.Factory{}),
		extension.Of("proxy.filters.http.tag", httpFiltersCategory, &wrapperspb.StringValue{}, f).WithRouteConfig(&wrapperspb.Int64Value{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tagFilterEntry is an http_filters entry of the tag filter.
func tagFilterEntry(name, tag string) *hcmv3.HttpFilter {
	return filter(name, wrapperspb.String(tag))
}

// perFilter is a typed_per_filter_config map of one entry.
func perFilter(name string, m proto.Message) map[string]*anypb.Any {
	return map[string]*anypb.Any{name: typed(m)}
}

// wrapped is a FilterConfig around m (nil: no config).
func wrapped(m proto.Message, optional, disabled bool) *routev3.FilterConfig {
	fc := &routev3.FilterConfig{IsOptional: optional, Disabled: disabled}
	if m != nil {
		fc.Config = typed(m)
	}
	return fc
}

// TestPerRouteConfig checks typed_per_filter_config: the most specific
// level wins (weighted cluster, route, virtual host, route
// configuration), keyed by the filter's configured name, and FilterConfig
// disables or enables the filter per route.
func TestPerRouteConfig(t *testing.T) {
	up := echoUpstream(t)
	st := stats.NewStore()
	ups := fakeUpstreams{"a": newFakeCluster(st, "a", false, hostOf(up)), "b": newFakeCluster(st, "b", false, hostOf(up))}
	direct := func(path string, pf map[string]*anypb.Any) *routev3.Route {
		r := directRoute(path, 200, "ok")
		r.TypedPerFilterConfig = pf
		return r
	}
	weighted := clusterRoute("/weighted", "", func(a *routev3.RouteAction) {
		a.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
			Clusters: []*routev3.WeightedCluster_ClusterWeight{
				{Name: "a", Weight: wrapperspb.UInt32(1), TypedPerFilterConfig: perFilter("one", wrapperspb.Int64(4))},
			},
		}}
	})
	weighted.TypedPerFilterConfig = perFilter("one", wrapperspb.Int64(3))
	rc := &routev3.RouteConfiguration{
		TypedPerFilterConfig: perFilter("one", wrapperspb.Int64(1)),
		VirtualHosts: []*routev3.VirtualHost{{
			Name: "vh", Domains: []string{"*"},
			TypedPerFilterConfig: perFilter("two", wrapperspb.Int64(2)),
			Routes: []*routev3.Route{
				direct("/route", perFilter("one", wrapperspb.Int64(3))),
				direct("/off", perFilter("one", wrapped(nil, false, true))),
				direct("/on", perFilter("three", &routev3.FilterConfig{Config: &anypb.Any{}})),
				direct("/on-with-config", perFilter("three", wrapped(wrapperspb.Int64(5), false, false))),
				weighted,
				direct("/", nil),
			},
		}},
	}
	off := tagFilterEntry("three", "t3")
	off.Disabled = true
	cfg := hcm(rc, tagFilterEntry("one", "t1"), tagFilterEntry("two", "t2"), off)
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Extensions: tagRegistry(t, tagFactory{})})

	tests := map[string]struct {
		path            string
		one, two, three string
	}{
		"the route configuration's and the virtual host's": {path: "/", one: "1", two: "2"},
		"the route's wins over the route configuration's":  {path: "/route", one: "3", two: "2"},
		"a route disables a filter":                        {path: "/off", two: "2"},
		"a route enables a disabled filter":                {path: "/on", one: "1", two: "2", three: "t3"},
		"a route enables it with a config":                 {path: "/on-with-config", one: "1", two: "2", three: "5"},
		"the weighted cluster's wins":                      {path: "/weighted", one: "4", two: "2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status, hdr, _ := do(t, client(), "GET", p.url(tc.path), nil, nil)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			got := [3]string{hdr.Get("x-tag-one"), hdr.Get("x-tag-two"), hdr.Get("x-tag-three")}
			if want := [3]string{tc.one, tc.two, tc.three}; got != want {
				t.Errorf("tags %q, want %q", got, want)
			}
		})
	}
}

// TestPerRouteConfigErrors checks what Envoy refuses, and ignores, in a
// typed_per_filter_config, with the entry's path.
func TestPerRouteConfigErrors(t *testing.T) {
	vh := func(pf map[string]*anypb.Any) *routev3.RouteConfiguration {
		rc := routeConfig(directRoute("/", 200, ""))
		rc.VirtualHosts[0].TypedPerFilterConfig = pf
		return rc
	}
	tests := map[string]struct {
		rc   *routev3.RouteConfiguration
		want string // empty: accepted
	}{
		"an unknown type": {rc: vh(perFilter("x", &emptypb.Empty{})),
			want: `route_config.virtual_hosts[0].typed_per_filter_config["x"]: Didn't find a registered implementation for 'x' with type URL: 'google.protobuf.Empty'`},
		"an optional unknown type": {rc: vh(perFilter("x", wrapped(&emptypb.Empty{}, true, false)))},
		"a filter without per-route configuration": {rc: vh(perFilter("hc", &healthcheckv3.HealthCheck{})),
			want: `typed_per_filter_config["hc"]: The filter hc doesn't support virtual host or route specific configurations`},
		"the filter's config type instead": {rc: vh(perFilter("one", wrapperspb.String("x"))),
			want: "the per-route configuration of proxy.filters.http.tag is a google.protobuf.Int64Value, not a google.protobuf.StringValue"},
		"a wrapper without config": {rc: vh(perFilter("one", wrapped(nil, false, false))),
			want: `typed_per_filter_config["one"].config: Empty route/virtual host per filter configuration for one filter`},
		"a bad per-route config": {rc: vh(perFilter("one", wrapped(wrapperspb.Int64(-1), false, false))),
			want: `typed_per_filter_config["one"].config.value: must not be negative`},
		"on a route": {rc: func() *routev3.RouteConfiguration {
			rc := routeConfig(directRoute("/", 200, ""))
			rc.VirtualHosts[0].Routes[0].TypedPerFilterConfig = perFilter("one", wrapperspb.Int64(-1))
			return rc
		}(), want: `route_config.virtual_hosts[0].routes[0].typed_per_filter_config["one"].value: must not be negative`},
		"a disabled wrapper needs no config": {rc: vh(perFilter("zzz", wrapped(nil, false, true)))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(hcm(tc.rc, tagFilterEntry("one", "t")), Deps{Stats: stats.NewStore(), Extensions: tagRegistry(t, tagFactory{})})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestFilterDestroyed checks that every filter made for a request is told
// when it ends, local replies and upstream responses alike.
func TestFilterDestroyed(t *testing.T) {
	var destroyed atomic.Int64
	cfg := hcm(routeConfig(directRoute("/", 200, "ok")), tagFilterEntry("one", "t"))
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Extensions: tagRegistry(t, tagFactory{destroyed: &destroyed})})
	do(t, client(), "GET", p.url("/"), nil, nil)
	do(t, client(), "GET", p.url("/"), nil, map[string]string{"x-reply": "1"})
	eventually(t, "two filters destroyed", func() bool { return destroyed.Load() == 2 })
}

// TestFilterLocalReplies checks the local replies of filters: plain, and
// in gRPC's form for gRPC requests (status 200, grpc-status, the body as
// grpc-message, percent-encoded).
func TestFilterLocalReplies(t *testing.T) {
	cfg := hcm(routeConfig(directRoute("/", 200, "ok")), tagFilterEntry("one", "t"))
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Extensions: tagRegistry(t, tagFactory{})})
	tests := map[string]struct {
		hdr        map[string]string
		h2         bool
		status     int
		body       string
		grpcStatus string
		grpcMsg    string
	}{
		"plain":                     {hdr: map[string]string{"x-reply": "1"}, status: 429, body: "slow down"},
		"gRPC, derived status":      {hdr: map[string]string{"x-reply": "1", "content-type": "application/grpc"}, h2: true, status: 200, grpcStatus: "14", grpcMsg: "slow down"},
		"gRPC, explicit status":     {hdr: map[string]string{"x-grpc-reply": "1", "content-type": "application/grpc+proto"}, h2: true, status: 200, grpcStatus: "9", grpcMsg: "not now 100%25"},
		"gRPC over HTTP/1":          {hdr: map[string]string{"x-grpc-reply": "1", "content-type": "application/grpc"}, status: 200, grpcStatus: "9", grpcMsg: "not now 100%25"},
		"not gRPC: grpc-web":        {hdr: map[string]string{"x-grpc-reply": "1", "content-type": "application/grpc-web"}, status: 503, body: "not now 100%"},
		"a non-gRPC explicit reply": {hdr: map[string]string{"x-grpc-reply": "1"}, status: 503, body: "not now 100%"},
		// A direct response is a local reply too, as in Envoy.
		"a direct response to a gRPC request": {hdr: map[string]string{"content-type": "application/grpc"}, h2: true, status: 200, grpcStatus: "2", grpcMsg: "ok"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := client()
			if tc.h2 {
				c = h2cClient()
			}
			status, hdr, body := do(t, c, "POST", p.url("/"), nil, tc.hdr)
			if status != tc.status || body != tc.body {
				t.Fatalf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
			if got := hdr.Get("grpc-status"); got != tc.grpcStatus {
				t.Errorf("grpc-status %q, want %q", got, tc.grpcStatus)
			}
			if got := hdr.Get("grpc-message"); got != tc.grpcMsg {
				t.Errorf("grpc-message %q, want %q", got, tc.grpcMsg)
			}
			if tc.grpcStatus != "" && hdr.Get("content-type") != "application/grpc" {
				t.Errorf("content-type %q", hdr.Get("content-type"))
			}
		})
	}
}

// TestFilterSleep checks that a filter's Sleep holds the request, and that
// the stream idle timeout cuts it short with a 408.
func TestFilterSleep(t *testing.T) {
	cfg := hcm(routeConfig(directRoute("/", 200, "ok")), tagFilterEntry("one", "t"))
	cfg.StreamIdleTimeout = durationpb.New(300 * time.Millisecond)
	slept := make(chan bool, 4)
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Extensions: tagRegistry(t, tagFactory{slept: slept})})

	start := time.Now()
	status, _, body := do(t, client(), "GET", p.url("/"), nil, map[string]string{"x-sleep-ms": "100"})
	if status != 200 || body != "ok" || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("got %d %q after %v, want 200 ok after 100ms", status, body, time.Since(start))
	}
	if !<-slept {
		t.Error("a sleep within the timeouts was cut short")
	}

	status, _, body = do(t, client(), "GET", p.url("/"), nil, map[string]string{"x-sleep-ms": "60000"})
	if status != 408 || body != "stream timeout" {
		t.Fatalf("got %d %q, want 408 stream timeout", status, body)
	}
	if <-slept {
		t.Error("a sleep past the stream idle timeout was not cut short")
	}
	if n := p.counter("http.test.downstream_rq_idle_timeout"); n != 1 {
		t.Errorf("downstream_rq_idle_timeout = %d, want 1", n)
	}
}

// TestFilterSleepClientGone checks that a client that goes away while a
// filter sleeps ends the sleep: an HTTP/1 connection closed, an HTTP/2
// stream reset. No goroutine sleeps on.
func TestFilterSleepClientGone(t *testing.T) {
	cfg := hcm(routeConfig(directRoute("/", 200, "ok")), tagFilterEntry("one", "t"))
	slept := make(chan bool, 4)
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Extensions: tagRegistry(t, tagFactory{slept: slept})})

	t.Run("HTTP/1 close", func(t *testing.T) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: h\r\nx-sleep-ms: 60000\r\n\r\n")
		time.Sleep(50 * time.Millisecond)
		_ = c.Close()
		select {
		case ok := <-slept:
			if ok {
				t.Error("the sleep went to its end")
			}
		case <-time.After(testTimeout):
			t.Fatal("the sleep went on after the client left")
		}
	})
	t.Run("HTTP/2 reset", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, "GET", p.url("/"), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-sleep-ms", "60000")
		done := make(chan error, 1)
		go func() {
			resp, err := h2cClient().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		cancel()
		<-done
		select {
		case ok := <-slept:
			if ok {
				t.Error("the sleep went to its end")
			}
		case <-time.After(testTimeout):
			t.Fatal("the sleep went on after the stream was reset")
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: h\r\nx-sleep-ms: 60000\r\n\r\n")
		time.Sleep(50 * time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_ = p.m.Shutdown(ctx)
		select {
		case ok := <-slept:
			if ok {
				t.Error("the sleep went to its end")
			}
		case <-time.After(testTimeout):
			t.Fatal("the sleep went on after the shutdown")
		}
		_ = c.SetReadDeadline(time.Now().Add(testTimeout))
		if _, err := bufio.NewReader(c).ReadByte(); err == nil {
			t.Error("a response was sent")
		}
	})
}
