package httpconn

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// heldFactory builds a test filter (config google.protobuf.StringValue)
// whose per-route configuration (a UInt64Value) holds a resource: it
// counts, by value, the per-route configurations compiled and closed.
// The filter puts the value of its per-route configuration in force in
// x-held, and a request with x-hold waits in it until release is closed.
type heldFactory struct {
	mu               sync.Mutex
	compiled, closes map[uint64]int
	held             chan struct{}
	release          chan struct{}
}

func newHeldFactory() *heldFactory {
	return &heldFactory{compiled: map[uint64]int{}, closes: map[uint64]int{}, held: make(chan struct{}, 1), release: make(chan struct{})}
}

func (f *heldFactory) Compile(m proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	if _, ok := m.(*wrapperspb.StringValue); !ok {
		return nil, errors.New("not a StringValue")
	}
	return &heldConfig{f: f, name: ctx.Name}, nil
}

func (f *heldFactory) CompileRoute(m proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	v := m.(*wrapperspb.UInt64Value).GetValue()
	if v == 0 {
		return nil, errors.New("value: must not be 0")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compiled[v]++
	return &heldRoute{f: f, v: v}, nil
}

// closed returns how many per-route configurations of value v were
// closed.
func (f *heldFactory) closed(v uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closes[v]
}

// heldRoute is a per-route configuration that holds a resource.
type heldRoute struct {
	f *heldFactory
	v uint64
}

func (r *heldRoute) Close() error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.closes[r.v]++
	return nil
}

type heldConfig struct {
	f    *heldFactory
	name string
}

func (c *heldConfig) NewFilter() httpfilter.Filter { return &heldFilter{c: c} }

type heldFilter struct {
	c   *heldConfig
	val string
}

func (f *heldFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.val = "none"
	if rc, ok := s.RouteConfig(f.c.name).(*heldRoute); ok {
		f.val = strconv.FormatUint(rc.v, 10)
	}
	if _, ok := s.RequestHeaders().Get("x-hold"); ok {
		f.c.f.held <- struct{}{}
		<-f.c.f.release
	}
	return httpfilter.Continue
}

func (f *heldFilter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	s.ResponseHeaders().Set("x-held", f.val)
	return httpfilter.Continue
}

func (*heldFilter) OnDestroy() {}

// heldRegistry is a registry of the router, the held filter and the tag
// filter.
func heldRegistry(t testing.TB, f *heldFactory) *extension.Registry {
	t.Helper()
	r, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of("test.held", httpFiltersCategory, &wrapperspb.StringValue{}, f).WithRouteConfig(&wrapperspb.UInt64Value{}),
		extension.Of("proxy.filters.http.tag", httpFiltersCategory, &wrapperspb.Int64Value{}, tagFactory{}).WithRouteConfig(&wrapperspb.Int64Value{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// heldRoutes is a route configuration of one direct route, with the held
// filter's per-route configuration at the virtual host (vh) and at the
// route (route); 0 leaves a level out.
func heldRoutes(vh, route uint64) *routev3.RouteConfiguration {
	r := directRoute("/", 200, "ok")
	rc := routeConfig(r)
	if route != 0 {
		r.TypedPerFilterConfig = map[string]*anypb.Any{"held": typed(wrapperspb.UInt64(route))}
	}
	if vh != 0 {
		rc.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"held": typed(wrapperspb.UInt64(vh))}
	}
	return rc
}

// waitClosed waits, for up to 10 s, until want per-route configurations
// of value v were closed, and fails if more were.
func waitClosed(t *testing.T, f *heldFactory, v uint64, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.closed(v) < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.closed(v); got != want {
		t.Fatalf("per-route configuration %d closed %d times, want %d", v, got, want)
	}
}

// TestRouteConfigsClosedAfterLastRequest checks that the per-route filter
// configurations of a route table that route discovery replaced are
// closed once, after the last request that started with it has ended,
// and those of the table in force when the manager shuts down.
func TestRouteConfigsClosedAfterLastRequest(t *testing.T) {
	f := newHeldFactory()
	cfg := hcm(heldRoutes(1, 2), filter("held", wrapperspb.String("")))
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Extensions: heldRegistry(t, f)})

	// A request in flight with the first table.
	type answer struct {
		held string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", p.url("/"), nil)
		req.Header.Set("x-hold", "1")
		resp, err := client().Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		done <- answer{held: resp.Header.Get("x-held")}
	}()
	select {
	case <-f.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the filter")
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(f.release)
		}
	}
	defer release()

	next, err := p.m.CompileRoutes(heldRoutes(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	p.m.SetRoutes(next)
	// New requests use the new table ...
	if _, hdr, _ := do(t, client(), "GET", p.url("/"), nil, nil); hdr.Get("x-held") != "4" {
		t.Fatalf("after the update: x-held %q, want 4", hdr.Get("x-held"))
	}
	// ... while the one in flight keeps the old one open.
	for _, v := range []uint64{1, 2} {
		if n := f.closed(v); n != 0 {
			t.Fatalf("per-route configuration %d closed %d times while a request uses it", v, n)
		}
	}

	release()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.held != "2" {
			t.Fatalf("the request in flight: x-held %q, want its table's 2", a.held)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight never ended")
	}
	waitClosed(t, f, 1, 1)
	waitClosed(t, f, 2, 1)
	if f.closed(3)+f.closed(4) != 0 {
		t.Fatal("the table in force was closed")
	}

	// Routes compiled but not set (a rejected update) are closed at once.
	discarded, err := p.m.CompileRoutes(heldRoutes(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	discarded.Discard()
	waitClosed(t, f, 5, 1)

	// A configuration that fails to compile closes what it compiled.
	bad := heldRoutes(6, 0)
	bad.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{"held": typed(wrapperspb.UInt64(0))}
	if _, err := p.m.CompileRoutes(bad); err == nil || !strings.Contains(err.Error(), "must not be 0") {
		t.Fatalf("CompileRoutes: %v, want the filter's error", err)
	}
	waitClosed(t, f, 6, 1)

	// The manager's last table closes with it.
	if err := p.m.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, f, 3, 1)
	waitClosed(t, f, 4, 1)
	// Routes set after the manager closed are closed at once.
	late, err := p.m.CompileRoutes(heldRoutes(7, 0))
	if err != nil {
		t.Fatal(err)
	}
	p.m.SetRoutes(late)
	waitClosed(t, f, 7, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	for v, n := range f.compiled {
		if f.closes[v] != n {
			t.Errorf("per-route configuration %d: compiled %d, closed %d", v, n, f.closes[v])
		}
	}
}

// TestRouteConfigsClosedWhenNewFails checks that a connection manager
// that fails to build closes the per-route configurations its route table
// compiled.
func TestRouteConfigsClosedWhenNewFails(t *testing.T) {
	f := newHeldFactory()
	cfg := hcm(heldRoutes(1, 0), filter("held", wrapperspb.String("")))
	cfg.HttpFilters = append(cfg.HttpFilters, filter("unknown", wrapperspb.Bool(true)))
	if _, err := New(cfg, Deps{Stats: stats.NewStore(), Extensions: heldRegistry(t, f)}); err == nil {
		t.Fatal("New accepted an unknown filter")
	}
	waitClosed(t, f, 1, 1)
}

// TestRouteConfigOfAnotherFilter checks that a per-route configuration
// keyed by a filter's name but of another filter's type (the entry's
// type picks the filter that compiles it, as in Envoy) reaches the filter
// as the other filter's configuration, which it ignores.
func TestRouteConfigOfAnotherFilter(t *testing.T) {
	f := newHeldFactory()
	rc := heldRoutes(0, 0)
	// The tag filter's configuration under the held filter's name.
	rc.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"held": typed(wrapperspb.Int64(9))}
	cfg := hcm(rc, filter("held", wrapperspb.String("")))
	p := startProxy(t, cfg, Deps{Stats: stats.NewStore(), Extensions: heldRegistry(t, f)})
	status, hdr, _ := do(t, client(), "GET", p.url("/"), nil, nil)
	if status != 200 || hdr.Get("x-held") != "none" {
		t.Fatalf("status %d, x-held %q: want 200 and none", status, hdr.Get("x-held"))
	}
}
