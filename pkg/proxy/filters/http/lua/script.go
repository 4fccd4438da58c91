package lua

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// script is one compiled Lua script and its pool of Lua states. A state
// serves one stream at a time: a stream takes one from the pool for a
// call of envoy_on_request or envoy_on_response and gives it back after,
// so a state is never used by two streams at once, and its globals carry
// over from one stream to the next as they do in Envoy's per-worker
// states.
type script struct {
	proto *glua.FunctionProto
	// onRequest and onResponse report the global functions the script
	// defines.
	onRequest, onResponse bool
	// readsBody reports that the script names body or trailers (its
	// constants hold the string): only then may a response script wait
	// for the body.
	readsBody bool
	// streams reports that the script names bodyChunks or trailers:
	// only then may a request script run beside its stream, letting the
	// request go on while it reads the body.
	streams bool
	budget  time.Duration
	// paths are package_paths' patterns, put ahead of package.path in
	// each state ("" for none).
	paths string
	// free are the idle states. A stream that finds none makes one; a
	// state given back to a full pool is dropped.
	free chan *vm
}

// poolSize is how many idle states a script keeps: a few per core, as
// streams run in goroutines of their own rather than on a few workers.
func poolSize() int { return 2 * runtime.GOMAXPROCS(0) }

// compileScript parses and compiles code, then loads it in a first state,
// which runs its top level: a syntax error, an error at load or a loop at
// load is a configuration error.
func compileScript(code, chunk string, budget time.Duration, paths string) (*script, error) {
	stmts, err := parse.Parse(strings.NewReader(code), chunk)
	if err != nil {
		return nil, fmt.Errorf("script does not compile: %s", oneLine(err.Error()))
	}
	proto, err := glua.Compile(stmts, chunk)
	if err != nil {
		return nil, fmt.Errorf("script does not compile: %s", oneLine(err.Error()))
	}
	sc := &script{proto: proto, budget: budget, paths: paths, free: make(chan *vm, poolSize()), readsBody: names(proto, "body", "bodyChunks", "trailers"), streams: names(proto, "bodyChunks", "trailers")}
	v, err := sc.newVM()
	if err != nil {
		return nil, err
	}
	sc.onRequest = v.onRequest != nil
	sc.onResponse = v.onResponse != nil
	sc.free <- v
	return sc, nil
}

// names reports whether the script (or a function in it) holds one of
// words among its string constants: a method the script calls by its
// name.
func names(p *glua.FunctionProto, words ...string) bool {
	for _, c := range p.Constants {
		if s, ok := c.(glua.LString); ok && slices.Contains(words, string(s)) {
			return true
		}
	}
	for _, f := range p.FunctionPrototypes {
		if names(f, words...) {
			return true
		}
	}
	return false
}

// acquire takes an idle state, or makes one.
func (sc *script) acquire() (*vm, error) {
	select {
	case v := <-sc.free:
		return v, nil
	default:
		return sc.newVM()
	}
}

// release gives v back to the pool; a state whose script ran out of time
// is closed instead (its script stopped at an arbitrary point).
func (sc *script) release(v *vm) {
	v.h.clear()
	if v.broken {
		v.close()
		return
	}
	select {
	case sc.free <- v:
	default:
		v.close()
	}
}

// vm is one Lua state with the script loaded and the objects a call
// hands to the script, whose methods are made once per state: a call
// allocates only the userdata of the objects it uses (see handle.fresh).
type vm struct {
	L                     *glua.LState
	onRequest, onResponse *glua.LFunction
	h                     *handle
	budget                *budget
	broken                bool
}

// newVM opens a state with the standard libraries Envoy's scripts use,
// the handle API's types, and the script loaded.
func (sc *script) newVM() (*vm, error) {
	L := glua.NewState(glua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   200,
		RegistrySize:    1024,
		RegistryMaxSize: 256 * 1024,
	})
	openLibs(L, sc.paths)
	v := &vm{L: L, budget: newBudget()}
	L.SetContext(v.budget.ctx)
	v.h = newHandle(v)

	fn := L.NewFunctionFromProto(sc.proto)
	v.budget.start(sc.budget)
	err := L.CallByParam(glua.P{Fn: fn, NRet: 0, Protect: true})
	expired := v.budget.stop()
	if expired {
		v.close()
		return nil, fmt.Errorf("script did not finish loading within %v", sc.budget)
	}
	if err != nil {
		v.close()
		return nil, fmt.Errorf("script load error: %s", errorText(err))
	}
	if f, ok := L.GetGlobal("envoy_on_request").(*glua.LFunction); ok {
		v.onRequest = f
	}
	if f, ok := L.GetGlobal("envoy_on_response").(*glua.LFunction); ok {
		v.onResponse = f
	}
	return v, nil
}

// close releases the state.
func (v *vm) close() {
	v.budget.cancel()
	v.L.Close()
}

// openLibs opens the libraries of Lua 5.1 that a filter script may use:
// base, table, string, math, coroutine, package (require of Lua modules
// found on package.path, which Envoy's scripts use for shared code; the
// path starts with paths, then the interpreter's default or LUA_PATH, as
// Envoy's does), and the os functions that read the clock and the
// environment. io and debug are left out, and so are the os functions
// that end the process or change files.
func openLibs(L *glua.LState, paths string) {
	for _, lib := range []struct {
		name string
		open glua.LGFunction
	}{
		{glua.LoadLibName, glua.OpenPackage},
		{glua.BaseLibName, glua.OpenBase},
		{glua.TabLibName, glua.OpenTable},
		{glua.StringLibName, glua.OpenString},
		{glua.MathLibName, glua.OpenMath},
		{glua.CoroutineLibName, glua.OpenCoroutine},
		{glua.OsLibName, glua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(glua.LString(lib.name))
		L.Call(1, 0)
	}
	if pkg, ok := L.GetGlobal(glua.LoadLibName).(*glua.LTable); ok && paths != "" {
		pkg.RawSetString("path", glua.LString(paths+";"+glua.LVAsString(pkg.RawGetString("path"))))
	}
	if os, ok := L.GetGlobal(glua.OsLibName).(*glua.LTable); ok {
		for _, name := range []string{"exit", "execute", "remove", "rename", "tmpname", "setlocale", "setenv"} {
			os.RawSetString(name, glua.LNil)
		}
	}
	for _, name := range []string{"dofile", "loadfile"} {
		L.SetGlobal(name, glua.LNil)
	}
	if str, ok := L.GetGlobal(glua.StringLibName).(*glua.LTable); ok {
		if rep, ok := str.RawGetString("rep").(*glua.LFunction); ok {
			str.RawSetString("rep", L.NewFunction(boundedRep(rep)))
		}
	}
}

// maxRep bounds what string.rep builds: one call must not take the
// process's memory (gopher-lua has no memory limit of its own).
const maxRep = 16 << 20

// boundedRep is string.rep that refuses results over maxRep bytes.
func boundedRep(rep *glua.LFunction) glua.LGFunction {
	return func(L *glua.LState) int {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if n > 0 && len(s) > 0 && n > maxRep/len(s) {
			L.RaiseError("string.rep: the result would be over %d bytes", maxRep)
		}
		L.Push(rep)
		L.Push(glua.LString(s))
		L.Push(glua.LNumber(n))
		L.Call(2, 1)
		return 1
	}
}

// errorText is the message of a script's error: the Lua error value and
// where it was raised, on one line.
func errorText(err error) string {
	var ae *glua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		return oneLine(ae.Object.String())
	}
	return oneLine(err.Error())
}

// oneLine joins a multi-line message so that it fits one log line or one
// configuration error.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
