package router

import (
	"errors"
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// ClusterSpecifier picks the cluster of each request of a route: a
// compiled cluster specifier plugin (RouteConfiguration's
// cluster_specifier_plugins, named by a route's cluster_specifier_plugin,
// or a route's inline_cluster_specifier_plugin). The router knows no
// plugin: Options.ClusterSpecifier compiles them.
type ClusterSpecifier interface {
	// Cluster is the name of r's cluster. It is called once per request
	// routed to the route, after matching; a name no cluster has (or "")
	// is answered as a cluster not found (503 NC, or the route's
	// cluster_not_found_response_code), as in Envoy.
	Cluster(r *Request) string
}

// clusterSpecifiers are the route configuration's compiled
// cluster_specifier_plugins, by their extension's name. A nil plugin is
// an optional one Outrigger does not have: routes that name it never
// match, as Envoy's null plugin routes nothing.
type clusterSpecifiers map[string]ClusterSpecifier

// compileClusterSpecifiers compiles the route configuration's
// cluster_specifier_plugins; errors name the entry.
func compileClusterSpecifiers(list []*routev3.ClusterSpecifierPlugin, opts *Options) (clusterSpecifiers, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := make(clusterSpecifiers, len(list))
	var errs []error
	for i, p := range list {
		name := p.GetExtension().GetName()
		if _, dup := out[name]; dup {
			// The API requires unique names; Envoy would keep the first
			// and silently drop the others.
			errs = append(errs, fmt.Errorf("cluster_specifier_plugins[%d].extension.name: %q is the name of an earlier plugin (names must be unique)", i, name))
			continue
		}
		cs, err := compileClusterSpecifier(p, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster_specifier_plugins[%d].%w", i, err))
			continue
		}
		out[name] = cs
	}
	return out, errors.Join(errs...)
}

// compileClusterSpecifier compiles one plugin with
// Options.ClusterSpecifier; errors name the field below the
// ClusterSpecifierPlugin.
func compileClusterSpecifier(p *routev3.ClusterSpecifierPlugin, opts *Options) (ClusterSpecifier, error) {
	if p.GetExtension() == nil {
		return nil, errors.New("extension: a plugin's extension is required")
	}
	if opts.ClusterSpecifier == nil {
		return nil, errors.New("extension: cluster specifier plugins are not supported here")
	}
	cs, err := opts.ClusterSpecifier(p.GetExtension(), p.GetIsOptional())
	if err != nil {
		return nil, fmt.Errorf("extension%w", err)
	}
	return cs, nil
}

// compileRouteClusterSpecifier sets r's plugin from a route action's
// cluster_specifier_plugin (a name among the route configuration's) or
// inline_cluster_specifier_plugin. A nil plugin (optional, not
// implemented) marks the route as one that never matches.
func compileRouteClusterSpecifier(r *Route, a *routev3.RouteAction, opts *Options) error {
	switch c := a.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_ClusterSpecifierPlugin:
		cs, ok := opts.plugins[c.ClusterSpecifierPlugin]
		if !ok {
			// Envoy's words.
			return fmt.Errorf("cluster_specifier_plugin: Unknown cluster specifier plugin name: %s is used in the route", c.ClusterSpecifierPlugin)
		}
		r.ClusterSpecifier, r.neverMatches = cs, cs == nil
	case *routev3.RouteAction_InlineClusterSpecifierPlugin:
		cs, err := compileClusterSpecifier(c.InlineClusterSpecifierPlugin, opts)
		if err != nil {
			return fmt.Errorf("inline_cluster_specifier_plugin.%w", err)
		}
		r.ClusterSpecifier, r.neverMatches = cs, cs == nil
	}
	return nil
}
