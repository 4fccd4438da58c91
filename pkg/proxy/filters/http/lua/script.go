package lua

import (
	"slices"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
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
	// free are the idle states.
	free *luavm.Pool[*vm]
}

// compileScript parses and compiles code, then loads it in a first state,
// which runs its top level: a syntax error, an error at load or a loop at
// load is a configuration error.
func compileScript(code, chunk string, budget time.Duration, paths string) (*script, error) {
	proto, err := luavm.Compile(code, chunk)
	if err != nil {
		return nil, err
	}
	sc := &script{proto: proto, budget: budget, paths: paths, readsBody: names(proto, "body", "bodyChunks", "trailers"), streams: names(proto, "bodyChunks", "trailers")}
	sc.free = luavm.NewPool(sc.newVM, (*vm).close)
	v, err := sc.newVM()
	if err != nil {
		return nil, err
	}
	sc.onRequest = v.onRequest != nil
	sc.onResponse = v.onResponse != nil
	sc.free.Put(v)
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

// release gives v back to the pool; a state whose script ran out of time
// is closed instead (its script stopped at an arbitrary point).
func (sc *script) release(v *vm) {
	v.h.clear()
	if v.broken {
		v.close()
		return
	}
	sc.free.Put(v)
}

// vm is one Lua state with the script loaded and the objects a call
// hands to the script, whose methods are made once per state: a call
// allocates only the userdata of the objects it uses (see handle.fresh).
type vm struct {
	*luavm.State
	onRequest, onResponse *glua.LFunction
	h                     *handle
	broken                bool
}

// newVM opens a state with the script loaded and the handle API's types.
func (sc *script) newVM() (*vm, error) {
	st, err := luavm.Load(sc.proto, sc.paths, sc.budget)
	if err != nil {
		return nil, err
	}
	v := &vm{State: st, onRequest: st.Function("envoy_on_request"), onResponse: st.Function("envoy_on_response")}
	v.h = newHandle(v)
	return v, nil
}

// close releases the state.
func (v *vm) close() { v.Close() }
