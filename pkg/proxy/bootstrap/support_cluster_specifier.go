package bootstrap

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
)

// supportedClusterSpecifiers lists the fields of cluster specifier
// plugins (package clusterspecifier; the router resolves the names) and
// of the Lua plugin.
var supportedClusterSpecifiers = map[protoreflect.FullName]fieldSupport{
	"envoy.config.route.v3.RouteConfiguration.cluster_specifier_plugins": {plugin: true},
	"envoy.config.route.v3.RouteAction.inline_cluster_specifier_plugin":  {plugin: true},
	"envoy.config.route.v3.RouteAction.cluster_specifier_plugin":         {},
	"envoy.config.route.v3.ClusterSpecifierPlugin.extension":             {},
	"envoy.config.route.v3.ClusterSpecifierPlugin.is_optional":           {},

	"envoy.extensions.router.cluster_specifiers.lua.v3.LuaConfig.source_code":     {},
	"envoy.extensions.router.cluster_specifiers.lua.v3.LuaConfig.default_cluster": {},
}

// clusterSpecifierPlugin checks a ClusterSpecifierPlugin: one that is
// optional and whose extension's type no enabled plugin has is left out,
// as Envoy leaves it out (its routes match nothing); an extension of
// another category is refused; any other is checked like a message.
func (c *supportChecker) clusterSpecifierPlugin(m protoreflect.Message, path string) {
	p, ok := m.Interface().(*routev3.ClusterSpecifierPlugin)
	if !ok {
		c.message(m, path)
		return
	}
	ext, ok := c.ext.Lookup(p.GetExtension().GetTypedConfig().GetTypeUrl())
	switch {
	case p.GetIsOptional() && (!ok || ext.Disabled || ext.Category != clusterspecifier.Category):
		return
	case ok && ext.Category != clusterspecifier.Category:
		// TypedExtensionConfig's own rule takes several categories.
		c.unsupported = append(c.unsupported, fieldErrorf(childPath(childPath(path, "extension"), "typed_config"),
			"extension %q (category %s) cannot be used here: expected category %s", ext.Name, ext.Category, clusterspecifier.Category))
		return
	}
	c.message(m, path)
}
