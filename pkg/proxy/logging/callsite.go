package logging

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// modulePath prefixes the file names of a -trimpath build.
const modulePath = "github.com/outrigger-dev/outrigger/"

// callSite is what the formatter and fine-grain logging need to know about
// the code that made a log call.
type callSite struct {
	file     string      // relative to the module root (%g)
	line     int         // %#
	function string      // package-qualified, e.g. server.(*Server).Start
	logger   *fileLogger // the file's logger; nil outside fine-grain mode
}

// siteCache maps program counters to call sites. Resolving a program counter
// is slow and call sites are few (bounded by the code), so each is resolved
// once. Reads take no lock: the map is copied on write and swapped in.
type siteCache struct {
	root  string // the module root directory, with a trailing slash
	sites atomic.Pointer[map[uintptr]*callSite]
	mu    sync.Mutex // serialises writers
	// onNew names the logger of a newly seen file (fine-grain mode); nil
	// outside fine-grain mode.
	onNew func(file string) *fileLogger
}

func newSiteCache(onNew func(string) *fileLogger) *siteCache {
	c := &siteCache{root: moduleRoot(), onNew: onNew}
	empty := map[uintptr]*callSite{}
	c.sites.Store(&empty)
	return c
}

// caller returns the call site skip frames above its own caller (skip 0 is
// the function calling caller).
func (c *siteCache) caller(skip int) *callSite {
	var pcs [1]uintptr
	if runtime.Callers(skip+2, pcs[:]) == 0 {
		return c.lookup(0)
	}
	return c.lookup(pcs[0])
}

// lookup returns the call site of a program counter, resolving it the first
// time. A zero pc is an unknown site.
func (c *siteCache) lookup(pc uintptr) *callSite {
	if s, ok := (*c.sites.Load())[pc]; ok {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.sites.Load()
	if s, ok := old[pc]; ok {
		return s
	}
	s := c.resolve(pc)
	next := make(map[uintptr]*callSite, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[pc] = s
	c.sites.Store(&next)
	return s
}

func (c *siteCache) resolve(pc uintptr) *callSite {
	s := &callSite{}
	if pc != 0 {
		frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
		s.file = relativePath(frame.File, c.root)
		s.line = frame.Line
		s.function = shortFunction(frame.Function)
	}
	if c.onNew != nil {
		name := s.file
		if name == "" {
			name = "unknown"
		}
		s.logger = c.onNew(name)
	}
	return s
}

// moduleRoot is the directory of the module this package was built in,
// found from this file's own path, so that %g prints
// "pkg/proxy/server/server.go" whatever directory the build ran in.
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	const self = "pkg/proxy/logging/callsite.go"
	if !ok || !strings.HasSuffix(file, self) {
		return ""
	}
	return strings.TrimSuffix(file, self)
}

// relativePath strips the module root (or, in a -trimpath build, the module
// path) from a source file name. Files outside the module keep their name.
func relativePath(file, root string) string {
	if root != "" && strings.HasPrefix(file, root) {
		return file[len(root):]
	}
	if i := strings.Index(file, modulePath); i >= 0 {
		return file[i+len(modulePath):]
	}
	return file
}

// shortFunction drops the import path of a function name:
// "github.com/x/y/pkg/server.(*Server).Start" is "server.(*Server).Start".
func shortFunction(fn string) string {
	// The last slash before any parenthesis or bracket ends the import path;
	// a slash inside a generic type argument list does not.
	end := len(fn)
	if i := strings.IndexAny(fn, "(["); i >= 0 {
		end = i
	}
	if i := strings.LastIndexByte(fn[:end], '/'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}
