package router

import (
	"errors"
	"fmt"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// Options are what Compile takes from its caller.
type Options struct {
	// FilterConfig compiles one entry of a typed_per_filter_config (of
	// the route configuration, a virtual host, a route or a weighted
	// cluster) for the HTTP filter configured as name, once the router
	// has unwrapped an envoy.config.route.v3.FilterConfig: optional is
	// its is_optional. It returns the compiled configuration, or nil to
	// keep the entry without one (an optional filter Outrigger does not
	// have: the filter then counts as enabled there, as in Envoy). Its
	// errors are appended to the path of the configuration, so they start
	// with ": " and a message, or "." and the field path below it. The
	// router knows no filter: the connection manager resolves them. Nil
	// refuses every typed_per_filter_config.
	FilterConfig func(name string, config *anypb.Any, optional bool) (any, error)
	// ClusterSpecifier compiles a cluster specifier plugin's extension
	// (of cluster_specifier_plugins or a route's
	// inline_cluster_specifier_plugin); optional is the plugin's
	// is_optional. It returns nil without an error for an optional
	// plugin Outrigger does not have: the routes that use it then never
	// match, as in Envoy. Errors are appended to the extension's path
	// (": " and a message, or "." and the field path below it). Nil
	// refuses every plugin.
	ClusterSpecifier func(ext *corev3.TypedExtensionConfig, optional bool) (ClusterSpecifier, error)
	// MetadataMatcher compiles a route's dynamic_metadata matcher (the
	// access-log filters' matcher, which the router cannot import); its
	// errors name the field below the matcher. Nil refuses
	// dynamic_metadata.
	MetadataMatcher func(*matcherv3.MetadataMatcher) (MetadataMatch, error)
	// Formatters holds the formatter extensions a direct response's
	// body_format may name (nil: none).
	Formatters *extension.Registry

	// plugins are the route configuration's compiled
	// cluster_specifier_plugins, while CompileWith runs.
	plugins clusterSpecifiers
}

// filterEntry is one compiled typed_per_filter_config entry.
type filterEntry struct {
	// config is the filter's compiled per-route configuration; nil when
	// the entry only enables or disables the filter.
	config any
	// disabled: FilterConfig.disabled, the filter does not run there.
	disabled bool
}

// filterConfigs is one level's typed_per_filter_config, by the filter's
// configured name.
type filterConfigs map[string]filterEntry

// filterConfigType is the wrapper that adds is_optional and disabled to
// a per-filter configuration.
var filterConfigType = string(proto.MessageName(&routev3.FilterConfig{}))

// compileFilterConfigs compiles one level's typed_per_filter_config, in
// name order so that errors are stable; nil when it is empty. Errors name
// the entry: typed_per_filter_config["name"]...
func compileFilterConfigs(m map[string]*anypb.Any, opts *Options) (filterConfigs, error) {
	if len(m) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make(filterConfigs, len(m))
	for _, name := range names {
		e, err := compileFilterEntry(name, m[name], opts)
		if err != nil {
			return nil, fmt.Errorf("typed_per_filter_config[%q]%w", name, err)
		}
		out[name] = e
	}
	return out, nil
}

// compileFilterEntry compiles one entry as Envoy's PerFilterConfigs does:
// a FilterConfig wrapper is unwrapped (disabled ignores the config; a
// wrapper without config is an error; an empty config only enables the
// filter); anything else goes to Options.FilterConfig. Errors start with
// the field below the entry (".config: ...") or ": ...".
func compileFilterEntry(name string, a *anypb.Any, opts *Options) (filterEntry, error) {
	if opts.FilterConfig == nil {
		return filterEntry{}, errors.New(": not supported here")
	}
	if typeName(a.GetTypeUrl()) != filterConfigType {
		cfg, err := opts.FilterConfig(name, a, false)
		if err != nil {
			return filterEntry{}, err
		}
		return filterEntry{config: cfg}, nil
	}
	var fc routev3.FilterConfig
	if err := a.UnmarshalTo(&fc); err != nil {
		return filterEntry{}, fmt.Errorf(": %w", err)
	}
	switch {
	case fc.GetDisabled():
		return filterEntry{disabled: true}, nil
	case fc.GetConfig() == nil:
		// Envoy's words.
		return filterEntry{}, fmt.Errorf(".config: Empty route/virtual host per filter configuration for %s filter", name)
	case fc.GetConfig().GetTypeUrl() == "":
		// An empty config enables a filter that is disabled by default.
		return filterEntry{}, nil
	}
	cfg, err := opts.FilterConfig(name, fc.GetConfig(), fc.GetIsOptional())
	if err != nil {
		return filterEntry{}, fmt.Errorf(".config%w", err)
	}
	return filterEntry{config: cfg}, nil
}

// typeName is the message name a type URL designates.
func typeName(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}

// HasFilterConfigs reports whether a level of the route (its weighted
// clusters, itself, its virtual host or the route configuration) has a
// typed_per_filter_config entry: when it has none, the lookups below all
// come back empty and need not be made.
func (r *Route) HasFilterConfigs() bool { return r.anyFilterConfig }

// FilterConfig returns the most specific per-route configuration of the
// filter configured as name, as Envoy's mostSpecificPerFilterConfig does:
// that of the weighted cluster picked (cluster, an index from
// PickCluster; -1 for none), else the route's, its virtual host's, then
// the route configuration's. It is nil when no level has one.
func (r *Route) FilterConfig(name string, cluster int) any {
	if !r.anyFilterConfig {
		return nil
	}
	if wc := r.clusterFilters(cluster); wc != nil {
		if e, ok := wc[name]; ok && e.config != nil {
			return e.config
		}
	}
	for _, l := range r.perFilter {
		if e, ok := l[name]; ok && e.config != nil {
			return e.config
		}
	}
	return nil
}

// FilterConfigs appends to dst the per-route configurations of the filter
// configured as name at every level that has one, least specific first
// (the route configuration's, the virtual host's, the route's, the
// weighted cluster's), as Envoy's perFilterConfigs lists them.
func (r *Route) FilterConfigs(name string, cluster int, dst []any) []any {
	if !r.anyFilterConfig {
		return dst
	}
	for i := len(r.perFilter) - 1; i >= 0; i-- {
		if e, ok := r.perFilter[i][name]; ok && e.config != nil {
			dst = append(dst, e.config)
		}
	}
	if wc := r.clusterFilters(cluster); wc != nil {
		if e, ok := wc[name]; ok && e.config != nil {
			dst = append(dst, e.config)
		}
	}
	return dst
}

// FilterDisabled reports what the most specific level that names the
// filter says: disabled (a FilterConfig with disabled set) or enabled
// (any other entry); ok is false when no level names it, and the filter's
// own disabled setting applies.
func (r *Route) FilterDisabled(name string, cluster int) (disabled, ok bool) {
	if !r.anyFilterConfig {
		return false, false
	}
	if wc := r.clusterFilters(cluster); wc != nil {
		if e, ok := wc[name]; ok {
			return e.disabled, true
		}
	}
	for _, l := range r.perFilter {
		if e, ok := l[name]; ok {
			return e.disabled, true
		}
	}
	return false, false
}

// clusterFilters is the typed_per_filter_config of weighted cluster i,
// nil when there is none.
func (r *Route) clusterFilters(i int) filterConfigs {
	if r.WeightedClusters == nil || i < 0 || i >= len(r.WeightedClusters.Clusters) {
		return nil
	}
	return r.WeightedClusters.Clusters[i].filters
}

// levelsOf orders a route's typed_per_filter_config levels, most specific
// first, leaving out the empty ones.
func levelsOf(route, vh, global filterConfigs) []filterConfigs {
	var out []filterConfigs
	for _, l := range []filterConfigs{route, vh, global} {
		if l != nil {
			out = append(out, l)
		}
	}
	return out
}
