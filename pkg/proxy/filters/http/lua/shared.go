package lua

import (
	"errors"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
)

// SharedVMs is what the server offers the filter for shared_vm_id (see
// httpfilter.Context.Services): its registry of shared Lua states, which
// lives as long as the server.
type SharedVMs interface {
	LuaVMs() *luavm.Registry
}

// errNoRegistry says why shared_vm_id is refused where the server offers no
// registry.
var errNoRegistry = errors.New("not supported by Outrigger here: no registry of shared Lua states is available to this filter configuration")

// loader compiles the scripts of one configuration (a Lua or a
// LuaPerRoute message). With a shared_vm_id it takes each script's states
// from the server's registry, as Envoy shares the VMs of the
// configurations that agree on the id, the script and its package paths,
// and keeps its holds until the configuration is closed.
type loader struct {
	reg      *luavm.Registry
	id       string
	releases []func()
}

// newLoader returns the loader of a configuration with shared_vm_id id
// ("" for none), compiled with ctx.
func newLoader(id string, ctx httpfilter.Context) (*loader, error) {
	l := &loader{id: id}
	if id == "" {
		return l, nil
	}
	if s, ok := ctx.Services.(SharedVMs); ok {
		l.reg = s.LuaVMs()
	}
	if l.reg == nil {
		return nil, errNoRegistry
	}
	return l, nil
}

// script compiles code (named chunk in errors), or finds the states of
// the same code and paths under the loader's id.
func (l *loader) script(code, chunk string, budget time.Duration, paths string) (*script, error) {
	if l.id == "" {
		return compileScript(code, chunk, budget, paths)
	}
	key := luavm.SharedKey{Kind: envoyName, ID: l.id, Code: code, Paths: paths}
	v, release, err := l.reg.Acquire(key, func() (any, func(), error) {
		sc, err := compileScript(code, chunk, budget, paths)
		if err != nil {
			return nil, nil, err
		}
		return sc, sc.free.Drain, nil
	})
	if err != nil {
		return nil, err
	}
	l.releases = append(l.releases, release)
	return v.(*script), nil
}

// release lets go of the shared states the configuration holds: the last
// configuration to hold a script's states closes them, so that the next
// one to ask for them starts with fresh globals.
func (l *loader) release() {
	if l == nil {
		return
	}
	for _, r := range l.releases {
		r()
	}
	l.releases = nil
}
