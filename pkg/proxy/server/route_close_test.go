package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// routeCloseCounts is an HTTP filter factory (config StringValue) whose
// per-route configurations (google.protobuf.Empty) hold a resource: they
// are closeCounts's counted filters.
type routeCloseCounts struct{ closeCounts }

func (*routeCloseCounts) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return nil, errors.New("only per-route configurations in this test")
}

func (f *routeCloseCounts) CompileRoute(proto.Message, httpfilter.Context) (httpfilter.RouteConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compiled++
	return &countedFilter{owner: &f.closeCounts}, nil
}

// perRouteListener is hcmListener whose virtual host carries a per-route
// configuration of the counting filter.
func perRouteListener(name, body string) string {
	return strings.Replace(hcmListener(name, body, ""), "            - name: all\n",
		"            - name: all\n              typed_per_filter_config: {counting: {\"@type\": type.googleapis.com/google.protobuf.Empty}}\n", 1)
}

// TestRouteConfigResourcesReleasedOnce checks that the per-route filter
// configurations of an inline route_config are closed exactly once when
// their listener is replaced or removed.
func TestRouteConfigResourcesReleasedOnce(t *testing.T) {
	f := &routeCloseCounts{}
	ext, err := extension.New(append(builtin.Registry().List(),
		extension.Of("test.counting", "envoy.filters.http", &wrapperspb.StringValue{}, f).WithRouteConfig(&emptypb.Empty{}))...)
	if err != nil {
		t.Fatal(err)
	}
	s := startListenerServerWith(t, ext, ldsBootstrap(t), "--drain-strategy", "immediate", "--drain-time-s", "0")
	want := func(step string, compiled, closes int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, n, twice := f.counts()
			if c == compiled && n == closes && twice == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d per-route configurations compiled, %d closes (%d repeated), want %d and %d", step, c, n, twice, compiled, closes)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: parseListeners(t, perRouteListener("dyn", "one"))}); err != nil {
		t.Fatal(err)
	}
	want("added", 1, 0)
	addr := listenerAddr(t, s, "dyn")
	if code, body, err := fetch(t, addr, "/"); err != nil || code != 200 || body != "one" {
		t.Fatalf("GET: %d %q %v", code, body, err)
	}
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "2", Resources: parseListeners(t, perRouteListener("dyn", "two"))}); err != nil {
		t.Fatal(err)
	}
	want("replaced", 2, 1)
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "3"}); err != nil {
		t.Fatal(err)
	}
	want("removed", 2, 2)
}
