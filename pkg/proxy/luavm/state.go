package luavm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// DefaultBudget is how long one call of a script may run on the Lua VM
// before it is stopped (time spent waiting, for an HTTP call or a body,
// is not counted). Envoy has no such bound; a looping script there blocks
// a worker for good.
const DefaultBudget = 500 * time.Millisecond

// Compile parses and compiles code, named chunk in error messages: a
// syntax error is the caller's configuration error.
func Compile(code, chunk string) (*glua.FunctionProto, error) {
	stmts, err := parse.Parse(strings.NewReader(code), chunk)
	if err != nil {
		return nil, fmt.Errorf("script does not compile: %s", OneLine(err.Error()))
	}
	proto, err := glua.Compile(stmts, chunk)
	if err != nil {
		return nil, fmt.Errorf("script does not compile: %s", OneLine(err.Error()))
	}
	return proto, nil
}

// State is one sandboxed Lua state with a script loaded, and the budget
// its runs are timed with.
type State struct {
	L      *glua.LState
	Budget *Budget
}

// Load opens a state (see OpenLibs; paths go ahead of package.path) and
// runs proto's top level within d: an error or a loop there is an error
// of the script, and the state is closed.
func Load(proto *glua.FunctionProto, paths string, d time.Duration) (*State, error) {
	L := glua.NewState(glua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   200,
		RegistrySize:    1024,
		RegistryMaxSize: 256 * 1024,
	})
	OpenLibs(L, paths)
	s := &State{L: L, Budget: NewBudget()}
	L.SetContext(s.Budget.ctx)
	expired, err := s.Call(L.NewFunctionFromProto(proto), d, 0)
	switch {
	case expired:
		s.Close()
		return nil, fmt.Errorf("script did not finish loading within %v", d)
	case err != nil:
		s.Close()
		return nil, fmt.Errorf("script load error: %s", ErrorText(err))
	}
	return s, nil
}

// Call calls fn with args, in protected mode, within d, leaving nret
// results on the stack. expired reports that the budget ran out and
// stopped the script: the state must not be used again (its script
// stopped at an arbitrary point).
func (s *State) Call(fn *glua.LFunction, d time.Duration, nret int, args ...glua.LValue) (expired bool, err error) {
	s.Budget.Start(d)
	err = s.L.CallByParam(glua.P{Fn: fn, NRet: nret, Protect: true}, args...)
	return s.Budget.Stop(), err
}

// Function is the global function name of the state's script, nil when
// it defines none.
func (s *State) Function(name string) *glua.LFunction {
	f, _ := s.L.GetGlobal(name).(*glua.LFunction)
	return f
}

// Close releases the state.
func (s *State) Close() {
	s.Budget.cancel()
	s.L.Close()
}

// OpenLibs opens the libraries of Lua 5.1 that a script may use: base,
// table, string, math, coroutine, package (require of Lua modules found
// on package.path, which Envoy's scripts use for shared code; the path
// starts with paths, then the interpreter's default or LUA_PATH, as
// Envoy's does), and the os functions that read the clock and the
// environment. io and debug are left out, and so are the os functions
// that end the process or change files.
func OpenLibs(L *glua.LState, paths string) {
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

// Metatable makes the metatable of one kind of object handed to scripts:
// its methods, and for any other name a Lua error saying that where (e.g.
// "Outrigger's Lua filter") has no such method of kind.
func Metatable(L *glua.LState, kind, where string, methods map[string]glua.LGFunction) *glua.LTable {
	index := L.SetFuncs(L.NewTable(), methods)
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *glua.LState) int {
		L.RaiseError("%s: %s is not supported by %s", kind, L.Get(2).String(), where)
		return 0
	}))
	L.SetMetatable(index, missing)
	mt := L.NewTable()
	mt.RawSetString("__index", index)
	mt.RawSetString("__metatable", glua.LString(kind))
	return mt
}

// ErrorText is the message of a script's error: the Lua error value and
// where it was raised, on one line.
func ErrorText(err error) string {
	var ae *glua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		return OneLine(ae.Object.String())
	}
	return OneLine(err.Error())
}

// OneLine joins a multi-line message so that it fits one log line or one
// configuration error.
func OneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
