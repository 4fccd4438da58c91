package lua

import (
	"io"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
)

// sharedServices offers a registry of shared states, as the server does.
type sharedServices struct {
	loopbackServices
	reg *luavm.Registry
}

func (s sharedServices) LuaVMs() *luavm.Registry { return s.reg }

// counter counts the requests its state has seen in a global.
const counter = `
count = (count or 0)
function envoy_on_request(h)
  count = count + 1
  h:headers():add("x-count", count)
end`

// countOf runs f on one request, with rc as the route's LuaPerRoute, and
// returns x-count.
func countOf(f testFilter, rc httpfilter.RouteConfig) string {
	s := request("/")
	if rc != nil {
		s.PerRoute = map[string][]httpfilter.RouteConfig{"lua": {rc}}
	}
	f.DecodeHeaders(s)
	got, _ := s.ReqHeaders.Get("x-count")
	return got
}

func TestSharedVM(t *testing.T) {
	reg := &luavm.Registry{}
	svc := sharedServices{reg: reg}
	a := compile(t, &luav3.Lua{SharedVmId: "vm", DefaultSourceCode: source(counter)}, svc)
	//lint:ignore SA1019 inline_code is deprecated, and still accepted.
	b := compile(t, &luav3.Lua{SharedVmId: "vm", InlineCode: counter}, svc)
	// Another id, or other package paths, keep states of their own.
	other := compile(t, &luav3.Lua{SharedVmId: "other", DefaultSourceCode: source(counter)}, svc)
	paths := compile(t, &luav3.Lua{SharedVmId: "vm", PackagePaths: []string{"/nonexistent/?.lua"}, DefaultSourceCode: source(counter)}, svc)
	if got := []string{countOf(a, nil), countOf(b, nil), countOf(a, nil), countOf(other, nil), countOf(paths, nil)}; strings.Join(got, ",") != "1,2,3,1,1" {
		t.Errorf("x-count over a, b, a, other id, other paths = %v, want 1,2,3,1,1", got)
	}
	if reg.Len() != 3 {
		t.Errorf("%d sets of shared states, want 3", reg.Len())
	}

	// A route's own script shares the filter's states under the same
	// id; a route that names a filter script ignores its id.
	rc, err := Factory{}.CompileRoute(&luav3.LuaPerRoute{SharedVmId: "vm", Override: &luav3.LuaPerRoute_SourceCode{SourceCode: source(counter)}},
		httpfilter.Context{Name: "lua", Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	if got := countOf(a, rc); got != "4" {
		t.Errorf("the route's script: x-count = %q, want 4 (the filter's states)", got)
	}
	named, err := Factory{}.CompileRoute(&luav3.LuaPerRoute{SharedVmId: "vm", Override: &luav3.LuaPerRoute_Name{Name: "x"}}, httpfilter.Context{Name: "lua"})
	if err != nil {
		t.Errorf("a route naming a script, with an id and no registry: %v", err)
	}
	_ = named.(*routeConfig).Close()

	// The states live while one configuration holds them.
	_ = other.Close()
	_ = paths.Close()
	_ = a.Close()
	_ = rc.(*routeConfig).Close()
	if reg.Len() != 1 || countOf(b, nil) != "5" {
		t.Errorf("with b left: %d sets, want 1, and b's states kept", reg.Len())
	}
	_ = b.Close()
	if reg.Len() != 0 {
		t.Errorf("after the last configuration: %d sets of shared states, want 0", reg.Len())
	}
	c := compile(t, &luav3.Lua{SharedVmId: "vm", DefaultSourceCode: source(counter)}, svc)
	if got := countOf(c, nil); got != "1" {
		t.Errorf("a configuration after the last one closed: x-count = %q, want 1 (fresh states)", got)
	}
}

func TestSharedVMErrors(t *testing.T) {
	reg := &luavm.Registry{}
	svc := sharedServices{reg: reg}
	ctx := httpfilter.Context{Name: "lua", Stats: compile(t, &luav3.Lua{}, nil).store, Services: svc}
	// A script that fails releases the ones compiled before it.
	_, err := Factory{}.Compile(&luav3.Lua{SharedVmId: "vm", DefaultSourceCode: source(counter),
		SourceCodes: map[string]*corev3.DataSource{"bad": source("x = ")}}, ctx)
	if err == nil || !strings.HasPrefix(err.Error(), `source_codes["bad"].inline_string: script does not compile`) {
		t.Errorf("err = %v", err)
	}
	if reg.Len() != 0 {
		t.Errorf("a refused configuration left %d sets of shared states", reg.Len())
	}
	up := ctx
	up.Upstream = true
	// In the router's upstream_http_filters the configuration holds the
	// states until its chain closes it, as downstream.
	upCfg, err := (Factory{}).Compile(&luav3.Lua{SharedVmId: "vm", DefaultSourceCode: source(counter)}, up)
	if err != nil || reg.Len() != 1 {
		t.Fatalf("upstream: err = %v, %d sets of shared states, want 1", err, reg.Len())
	}
	if c, ok := upCfg.(io.Closer); !ok {
		t.Error("an upstream configuration with shared_vm_id must be closable")
	} else if _ = c.Close(); reg.Len() != 0 {
		t.Errorf("upstream: %d sets of shared states after its close, want 0", reg.Len())
	}
	if _, err := (Factory{}).CompileRoute(&luav3.LuaPerRoute{SharedVmId: "vm", Override: &luav3.LuaPerRoute_SourceCode{SourceCode: source("x = ")}}, ctx); err == nil || reg.Len() != 0 {
		t.Errorf("a route script that does not compile: err = %v, %d sets left", err, reg.Len())
	}
}
