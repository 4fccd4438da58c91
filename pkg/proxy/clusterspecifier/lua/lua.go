// Package lua is the Lua cluster specifier plugin
// (envoy.router.cluster_specifier_plugin.lua): a script's
// envoy_on_route(route_handle) returns the name of each request's
// cluster, reading the request's headers through route_handle:headers().
// As in Envoy, a script that fails, or returns something other than a
// string (or a number, which Lua turns into one), routes to
// default_cluster, with an error logged; a name no cluster has is
// answered as a cluster not found (503 NC). It keeps no stats, as Envoy
// keeps none. The script runs on the states of package luavm, sandboxed
// and timed as the Lua HTTP filter's: one that runs past its time budget
// is stopped and routes to default_cluster.
package lua

import (
	"errors"
	"fmt"
	"strings"
	"time"

	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/lua/v3"
	"github.com/go-logr/logr"
	glua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the plugin's name in the proxy. spelling.
const Name = "proxy.router.cluster_specifier_plugin.lua"

// entryPoint is the function the script must define.
const entryPoint = "envoy_on_route"

// Factory compiles the plugin.
type Factory struct{}

var _ clusterspecifier.Factory = Factory{}

// plugin is a compiled LuaConfig: the script's states and the default
// cluster.
type plugin struct {
	proto          *glua.FunctionProto
	defaultCluster string
	budget         time.Duration
	log            logr.Logger
	free           *luavm.Pool[*vm]
}

// Compile implements clusterspecifier.Factory: the script is read and
// loaded once, and must define envoy_on_route. Errors name the field
// below the LuaConfig.
func (Factory) Compile(m proto.Message, ctx clusterspecifier.Context) (router.ClusterSpecifier, error) {
	c, ok := m.(*luav3.LuaConfig)
	if !ok {
		return nil, errors.New("not a LuaConfig")
	}
	if c.GetSourceCode() == nil {
		return nil, errors.New("source_code: a script is required")
	}
	code, err := datasource.Read(c.GetSourceCode())
	if err != nil {
		return nil, fmt.Errorf("source_code.%w", err)
	}
	p := &plugin{defaultCluster: c.GetDefaultCluster(), budget: luavm.DefaultBudget, log: ctx.Log}
	if p.proto, err = luavm.Compile(string(code), "source_code"); err != nil {
		return nil, fmt.Errorf("source_code: %w", err)
	}
	p.free = luavm.NewPool(p.newVM, (*vm).close)
	v, err := p.newVM()
	if err != nil {
		return nil, fmt.Errorf("source_code: %w", err)
	}
	p.free.Put(v)
	return p, nil
}

// vm is one state with the script loaded: its envoy_on_route and the
// metatables of the objects a call hands out.
type vm struct {
	*luavm.State
	fn                 *glua.LFunction
	handleMT, headerMT *glua.LTable
}

// newVM loads the script in a new state.
func (p *plugin) newVM() (*vm, error) {
	st, err := luavm.Load(p.proto, "", p.budget)
	if err != nil {
		return nil, err
	}
	fn := st.Function(entryPoint)
	if fn == nil {
		st.Close()
		// Envoy's words.
		//lint:ignore ST1005 Envoy's message, full stop included, so that searches for it find it
		return nil, errors.New("envoy_on_route() function not found. Lua will not hook cluster specifier.")
	}
	v := &vm{State: st, fn: fn}
	L := st.L
	v.handleMT = luavm.Metatable(L, "route handle", "Outrigger's Lua cluster specifier", map[string]glua.LGFunction{"headers": v.headers})
	v.headerMT = luavm.Metatable(L, "header map", "Outrigger's Lua cluster specifier", map[string]glua.LGFunction{"get": headerGet})
	return v, nil
}

// close releases the state.
func (v *vm) close() { v.Close() }

// call is one run of envoy_on_route: the request it may read until it
// returns (nil after: objects a script kept are then refused, as Envoy
// refuses them), and its header object once made.
type call struct {
	req     *router.Request
	headers *glua.LUserData
}

// Cluster implements router.ClusterSpecifier.
func (p *plugin) Cluster(r *router.Request) string {
	v, err := p.free.Get()
	if err != nil {
		p.fail(err.Error())
		return p.defaultCluster
	}
	c := &call{req: r}
	ud := v.L.NewUserData()
	ud.Value = c
	v.L.SetMetatable(ud, v.handleMT)
	expired, err := v.Call(v.fn, p.budget, glua.MultRet, ud)
	c.req, c.headers = nil, nil
	// Envoy reads the value on top of the stack: the last one returned.
	L := v.L
	ret := glua.LValue(glua.LNil)
	if n := L.GetTop(); n > 0 {
		ret = L.Get(-1)
		L.Pop(n)
	}
	if expired {
		v.close()
		p.fail(fmt.Sprintf("script stopped: it ran past its time budget of %v", p.budget))
		return p.defaultCluster
	}
	p.free.Put(v)
	if err != nil {
		p.fail(luavm.ErrorText(err))
		return p.defaultCluster
	}
	switch ret := ret.(type) {
	case glua.LString:
		return string(ret)
	case glua.LNumber:
		// lua_tolstring turns a number into its string.
		return ret.String()
	}
	p.log.Error(nil, "script log: return value is not string, use default cluster")
	return p.defaultCluster
}

// fail logs a run's error as Envoy does.
func (p *plugin) fail(msg string) {
	p.log.Error(nil, "script log: "+msg+", use default cluster")
}

// current is the call of the object a method was called on (argument 1),
// raising a Lua error for an object of an earlier call.
func current(L *glua.LState) *call {
	c, ok := L.CheckUserData(1).Value.(*call)
	if !ok || c.req == nil {
		L.RaiseError("object used outside of proper scope")
	}
	return c
}

// headers is route_handle:headers(): the request's header map, the same
// object for the whole call.
func (v *vm) headers(L *glua.LState) int {
	c := current(L)
	if c.headers == nil {
		c.headers = L.NewUserData()
		c.headers.Value = c
		L.SetMetatable(c.headers, v.headerMT)
	}
	L.Push(c.headers)
	return 1
}

// headerGet is headers():get(name): every value of the header joined by
// ",", nil when there is none. The pseudo-headers (:authority, :path,
// :method, :scheme) are the request's, as they are in Envoy's header map.
func headerGet(L *glua.LState) int {
	c := current(L)
	name := strings.ToLower(L.CheckString(2))
	var (
		value string
		ok    bool
	)
	switch name {
	case ":authority":
		value, ok = c.req.Host, c.req.Host != ""
	case ":path":
		value, ok = c.req.Path, c.req.Path != ""
	case ":method":
		value, ok = c.req.Method, c.req.Method != ""
	case ":scheme":
		value, ok = c.req.Scheme, c.req.Scheme != ""
	default:
		if c.req.Headers != nil {
			value, ok = c.req.Headers.Get(name)
		}
	}
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(glua.LString(value))
	return 1
}
