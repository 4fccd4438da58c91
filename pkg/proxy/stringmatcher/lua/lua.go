// Package lua is the Lua string matcher (envoy.string_matcher.lua), the
// extension a StringMatcher's custom field names: a script defines a
// global function envoy_match(str) whose boolean result says whether str
// matches. As in Envoy, the script is loaded once when the configuration
// loads (an error there, or a script without envoy_match, is a
// configuration error), and a run that raises an error or returns
// anything but a boolean does not match. The script runs on the states of
// package luavm, sandboxed and timed as the Lua filter's: a pool of
// states rather than Envoy's one per worker thread, and a run that goes
// past its time budget is stopped (no match) and its state thrown away.
package lua

import (
	"errors"
	"fmt"
	"time"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/string_matcher/lua/v3"
	glua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.string_matcher.lua"

// Category is the extension category of string matchers.
const Category = "envoy.string_matcher"

// TypeName is the full name of the extension's configuration, by which a
// StringMatcher's custom typed_config selects it.
const TypeName = "envoy.extensions.string_matcher.lua.v3.Lua"

// entryPoint is the function the script must define.
const entryPoint = "envoy_match"

// Matcher is a compiled Lua string matcher. It is safe for concurrent
// use: each match takes a state of its pool.
type Matcher struct {
	proto  *glua.FunctionProto
	budget time.Duration
	free   *luavm.Pool[*vm]
}

// vm is one state with the script loaded, and its envoy_match.
type vm struct {
	*luavm.State
	fn *glua.LFunction
}

// Compile reads and loads the script of m. Errors name the field below
// the Lua message.
func Compile(m proto.Message) (*Matcher, error) {
	c, ok := m.(*luav3.Lua)
	if !ok {
		return nil, errors.New("not a Lua string matcher configuration")
	}
	if c.GetSourceCode().GetSpecifier() == nil {
		return nil, errors.New("source_code: a script is required")
	}
	code, err := datasource.Read(c.GetSourceCode())
	if err != nil {
		return nil, fmt.Errorf("source_code.%w", err)
	}
	mt := &Matcher{budget: luavm.DefaultBudget}
	if mt.proto, err = luavm.Compile(string(code), "source_code"); err != nil {
		return nil, fmt.Errorf("source_code: %w", err)
	}
	mt.free = luavm.NewPool(mt.newVM, (*vm).close)
	v, err := mt.newVM()
	if err != nil {
		return nil, fmt.Errorf("source_code: %w", err)
	}
	mt.free.Put(v)
	return mt, nil
}

// CompileCustom compiles a StringMatcher's custom pattern: Envoy's one
// string matcher extension, this one, chosen by the type of typed_config.
// Errors name the field below the TypedExtensionConfig.
func CompileCustom(ext *xdscorev3.TypedExtensionConfig) (*Matcher, error) {
	a := ext.GetTypedConfig()
	if a == nil {
		return nil, errors.New("typed_config: a string matcher extension is required")
	}
	if typ := a.MessageName(); typ != TypeName {
		return nil, fmt.Errorf("typed_config: string matcher %s is not supported by Outrigger (only %s, envoy.string_matcher.lua)", typ, TypeName)
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("typed_config: %w", err)
	}
	m, err := Compile(msg)
	if err != nil {
		return nil, fmt.Errorf("typed_config.%w", err)
	}
	return m, nil
}

// newVM loads the script in a new state.
func (m *Matcher) newVM() (*vm, error) {
	st, err := luavm.Load(m.proto, "", m.budget)
	if err != nil {
		return nil, err
	}
	fn := st.Function(entryPoint)
	if fn == nil {
		st.Close()
		// Envoy's words.
		//lint:ignore ST1005 Envoy's message, so that searches for it find it
		return nil, errors.New("Lua code did not contain a global function named 'envoy_match'")
	}
	return &vm{State: st, fn: fn}, nil
}

// close releases the state.
func (v *vm) close() { v.Close() }

// Match reports whether s matches: envoy_match(s) returned true. An error
// of the script, a result that is not a boolean, or a run stopped at its
// time budget is no match, as Envoy's failed runs are.
func (m *Matcher) Match(s string) bool {
	v, err := m.free.Get()
	if err != nil {
		// The script loaded once; a state that cannot load it now (its
		// top level depends on the clock, say) matches nothing.
		return false
	}
	expired, err := v.Call(v.fn, m.budget, 1, glua.LString(s))
	if expired {
		v.close()
		return false
	}
	L := v.L
	ret := glua.LValue(glua.LNil)
	if err == nil && L.GetTop() > 0 {
		ret = L.Get(-1)
	}
	L.SetTop(0)
	m.free.Put(v)
	b, ok := ret.(glua.LBool)
	return ok && bool(b)
}
