// Package lua is the Lua HTTP filter (envoy.filters.http.lua): scripts
// that define envoy_on_request and envoy_on_response run on the request
// and response heads with Envoy's stream handle API (headers, buffered
// bodies, response body chunks and trailers, direct responses, HTTP calls
// to a cluster, logging, stream info, dynamic and route metadata, the
// connection). The
// scripts run on gopher-lua, an embedded Lua 5.1 VM: a script keeps a
// pool of Lua states, one per stream at a time, as Envoy keeps one per
// worker, so that globals a script sets live on in its state. A script
// that fails is answered 500 and counted in
// http.<stat_prefix>.lua.<filter stat_prefix>.errors; one that runs past
// its time budget is stopped, answered the same way, and its state thrown
// away.
//
// It may run as an upstream filter too (the router's
// upstream_http_filters), as Envoy's dual factory allows: its scripts then
// run on each attempt, on the request as it goes upstream and on the
// response the attempt brings back, with a filter of the attempt's own,
// whose waits for bodies end with the attempt; clearing the route cache
// does nothing there, as the request was routed already. Its errors count
// in lua.<filter stat_prefix>.errors, under the server's scope as Envoy
// keeps the router's upstream filters' stats.
package lua

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.lua"

// envoyName is the filter's canonical name: the key of its route metadata
// (metadata()).
const envoyName = "envoy.filters.http.lua"

// maxBody bounds the request body body() buffers and the response body of
// an httpCall: Envoy's default per-connection buffer limit (1 MiB).
const maxBody = 1 << 20

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory         = Factory{}
	_ httpfilter.RouteFactory    = Factory{}
	_ httpfilter.UpstreamCapable = Factory{}
)

// UpstreamCapable implements httpfilter.UpstreamCapable: Lua is one of
// Envoy's dual filters.
func (Factory) UpstreamCapable() {}

// filterConfig is a compiled Lua filter. It keeps no state per request
// (a stream's scripts are found again from its route), so it is its own
// filter.
type filterConfig struct {
	name string
	// def is the default script (inline_code or default_source_code),
	// nil when there is none.
	def *script
	// named are the source_codes, for LuaPerRoute.name.
	named           map[string]*script
	clearRouteCache bool
	errors          *stats.Counter
	log             logr.Logger
	services        httpfilter.Services
	budget          time.Duration
	// transports are the httpCall connections, per cluster.
	transports sync.Map
	// filters are the idle per-request filters.
	filters sync.Pool
	// async holds a token per asynchronous httpCall in flight.
	async chan struct{}
	// filterContext is what filterContext() returns, unless the route's
	// LuaPerRoute has one.
	filterContext *structpb.Struct
	// shared holds the states taken from the server's registry
	// (shared_vm_id), released by Close.
	shared *loader
}

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(m proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	p, ok := m.(*luav3.Lua)
	if !ok {
		return nil, errors.New("not a Lua configuration")
	}
	if ctx.Stats == nil {
		return nil, httpfilter.ErrNoStats
	}
	switch {
	case len(p.GetPackageCpaths()) > 0:
		return nil, errors.New("package_cpaths: not supported by Outrigger: gopher-lua, the Lua Outrigger runs, cannot load C modules (package_paths, for Lua modules, is supported)")
	}
	shared, err := newLoader(p.GetSharedVmId(), ctx)
	if err != nil {
		return nil, fmt.Errorf("shared_vm_id: %w", err)
	}
	c := &filterConfig{
		name:            ctx.Name,
		named:           map[string]*script{},
		clearRouteCache: p.GetClearRouteCache() == nil || p.GetClearRouteCache().GetValue(),
		log:             ctx.Log,
		services:        ctx.Services,
		budget:          luavm.DefaultBudget,
		async:           make(chan struct{}, maxAsyncCalls),
		filterContext:   p.GetFilterContext(),
		shared:          shared,
	}
	prefix := ctx.StatPrefix + "lua." + p.GetStatPrefix()
	if !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	c.errors = ctx.Stats.Counter(prefix + "errors")

	paths := packagePath(p.GetPackagePaths())
	if err := c.compileScripts(p, paths); err != nil {
		shared.release()
		return nil, err
	}
	return c, nil
}

// compileScripts compiles the default script and the source_codes.
func (c *filterConfig) compileScripts(p *luav3.Lua, paths string) error {
	var err error
	//lint:ignore SA1019 inline_code is deprecated for default_source_code, and still accepted (with the bootstrap's deprecation warning), as in Envoy.
	inlineCode := p.GetInlineCode()
	switch {
	case inlineCode != "" && p.GetDefaultSourceCode() != nil:
		return errors.New("default_source_code: only one of inline_code or default_source_code may be set")
	case inlineCode != "":
		if c.def, err = c.shared.script(inlineCode, "inline_code", c.budget, paths); err != nil {
			return fmt.Errorf("inline_code: %w", err)
		}
	case p.GetDefaultSourceCode() != nil:
		if c.def, err = compileSource(p.GetDefaultSourceCode(), "default_source_code", c.shared, c.budget, paths); err != nil {
			return fmt.Errorf("default_source_code.%w", err)
		}
	}
	names := make([]string, 0, len(p.GetSourceCodes()))
	for name := range p.GetSourceCodes() {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sc, err := compileSource(p.GetSourceCodes()[name], name, c.shared, c.budget, paths)
		if err != nil {
			return fmt.Errorf("source_codes[%q].%w", name, err)
		}
		c.named[name] = sc
	}
	return nil
}

// routeConfig is a compiled LuaPerRoute: disabled, the name of one of the
// filter's source_codes, or a script of its own.
type routeConfig struct {
	disabled      bool
	name          string
	script        *script
	filterContext *structpb.Struct
	// shared holds the route script's states taken from the server's
	// registry (shared_vm_id), released by Close.
	shared *loader
}

// CompileRoute implements httpfilter.RouteFactory: LuaPerRoute.
func (Factory) CompileRoute(m proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := m.(*luav3.LuaPerRoute)
	if !ok {
		return nil, errors.New("not a LuaPerRoute configuration")
	}
	if len(p.GetPackageCpaths()) > 0 {
		return nil, errors.New("package_cpaths: not supported by Outrigger: gopher-lua, the Lua Outrigger runs, cannot load C modules (package_paths, for Lua modules, is supported)")
	}
	// As in Envoy, the id matters only to the route's own script: a
	// route that names one of the filter's scripts, or disables the
	// filter, uses the filter's states.
	id := ""
	if _, own := p.GetOverride().(*luav3.LuaPerRoute_SourceCode); own {
		id = p.GetSharedVmId()
	}
	shared, err := newLoader(id, ctx)
	if err != nil {
		return nil, fmt.Errorf("shared_vm_id: %w", err)
	}
	rc, err := compileOverride(p, shared)
	if err != nil {
		shared.release()
		return nil, err
	}
	rc.filterContext = p.GetFilterContext()
	rc.shared = shared
	return rc, nil
}

// Close implements io.Closer: the route's hold on shared states.
func (rc *routeConfig) Close() error {
	rc.shared.release()
	return nil
}

// compileOverride compiles LuaPerRoute's override.
func compileOverride(p *luav3.LuaPerRoute, shared *loader) (*routeConfig, error) {
	switch o := p.GetOverride().(type) {
	case *luav3.LuaPerRoute_Disabled:
		if !o.Disabled {
			// protoc-gen-validate requires true; a false that slipped
			// through would otherwise select nothing.
			return nil, errors.New("disabled: must be true")
		}
		return &routeConfig{disabled: true}, nil
	case *luav3.LuaPerRoute_Name:
		if o.Name == "" {
			return nil, errors.New("name: must not be empty")
		}
		return &routeConfig{name: o.Name}, nil
	case *luav3.LuaPerRoute_SourceCode:
		// The route's own patterns: its script gets a VM of its own,
		// which does not see the filter's. With a name (or disabled)
		// they have nothing to apply to, as in Envoy.
		sc, err := compileSource(o.SourceCode, "source_code", shared, luavm.DefaultBudget, packagePath(p.GetPackagePaths()))
		if err != nil {
			return nil, fmt.Errorf("source_code.%w", err)
		}
		return &routeConfig{script: sc}, nil
	}
	return nil, errors.New("override: one of disabled, name or source_code must be set")
}

// packagePath joins package_paths into the patterns placed ahead of the
// interpreter's own package.path ("" for none).
func packagePath(patterns []string) string {
	return strings.Join(patterns, ";")
}

// compileSource reads a DataSource once, at configuration time, and
// compiles its script; errors name the field below the DataSource.
func compileSource(ds *corev3.DataSource, chunk string, l *loader, budget time.Duration, paths string) (*script, error) {
	var (
		code  string
		field string
	)
	switch s := ds.GetSpecifier().(type) {
	case *corev3.DataSource_InlineString:
		code, field = s.InlineString, "inline_string"
	case *corev3.DataSource_InlineBytes:
		code, field = string(s.InlineBytes), "inline_bytes"
	case *corev3.DataSource_Filename:
		b, err := os.ReadFile(s.Filename)
		if err != nil {
			return nil, fmt.Errorf("filename: %w", err)
		}
		code, field = string(b), "filename"
	case *corev3.DataSource_EnvironmentVariable:
		v, err := datasource.Env(s.EnvironmentVariable)
		if err != nil {
			return nil, err
		}
		code, field = v, "environment_variable"
	default:
		return nil, errors.New("specifier: not supported by Outrigger")
	}
	sc, err := l.script(code, chunk, budget, paths)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return sc, nil
}

// scriptFor is the script that runs for the stream: the route's
// LuaPerRoute (nil when it disables the filter, or names no script of
// the filter's source_codes), else the default script.
func (c *filterConfig) scriptFor(s httpfilter.Stream) *script {
	rc, ok := s.RouteConfig(c.name).(*routeConfig)
	if !ok {
		return c.def
	}
	switch {
	case rc.disabled:
		return nil
	case rc.script != nil:
		return rc.script
	}
	sc := c.named[rc.name]
	if sc == nil && c.log.V(1).Enabled() {
		c.log.V(1).Info("lua: no script of that name in source_codes; the filter does nothing", "name", rc.name)
	}
	return sc
}

// Close implements io.Closer: the idle connections of HTTP calls, and the
// configuration's hold on shared states.
func (c *filterConfig) Close() error {
	c.shared.release()
	c.transports.Range(func(_, v any) bool {
		v.(interface{ CloseIdleConnections() }).CloseIdleConnections()
		return true
	})
	return nil
}
