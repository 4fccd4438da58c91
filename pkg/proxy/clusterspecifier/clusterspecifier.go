// Package clusterspecifier is the family of cluster specifier plugins,
// Envoy's envoy.router.cluster_specifier_plugin extensions: a route's
// cluster_specifier_plugin or inline_cluster_specifier_plugin picks the
// cluster of each request through one. A plugin package (lua, matcher) registers a
// Factory, which compiles its configuration into a
// router.ClusterSpecifier; Compiler resolves a plugin's extension through
// the registry for the router.
package clusterspecifier

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Category is Envoy's extension category of the plugins.
const Category = "envoy.router.cluster_specifier_plugin"

// Context is what a plugin is compiled with.
type Context struct {
	// Log is where a plugin reports what goes wrong per request (a
	// script's error).
	Log logr.Logger
}

// Factory compiles a plugin's configuration.
type Factory interface {
	// Compile checks and compiles the extension's typed_config. Errors
	// name the field path below it.
	Compile(config proto.Message, ctx Context) (router.ClusterSpecifier, error)
}

// Compiler returns router.Options.ClusterSpecifier: the plugin of an
// extension is the one of this category its typed_config's type selects,
// as Envoy finds it. A type no enabled plugin has is an error in Envoy's
// words, unless the plugin is optional: then it is left out (nil), and
// the routes that use it match nothing, as with Envoy's null plugin.
func Compiler(reg *extension.Registry, ctx Context) func(*corev3.TypedExtensionConfig, bool) (router.ClusterSpecifier, error) {
	return func(ext *corev3.TypedExtensionConfig, optional bool) (router.ClusterSpecifier, error) {
		a := ext.GetTypedConfig()
		var (
			x  extension.Extension
			ok bool
		)
		if reg != nil && a != nil {
			x, ok = reg.LookupIn(Category, a.GetTypeUrl())
		}
		f, isPlugin := x.Factory.(Factory)
		if !ok || x.Category != Category || x.Disabled || !isPlugin {
			if optional {
				ctx.Log.Info("optional cluster specifier plugin left out: no registered implementation; its routes match nothing", "name", ext.GetName(), "type", extension.TypeName(a.GetTypeUrl()))
				return nil, nil
			}
			return nil, fmt.Errorf(": Didn't find a registered implementation for '%s' with type URL: '%s'", ext.GetName(), extension.TypeName(a.GetTypeUrl()))
		}
		msg, err := a.UnmarshalNew()
		if err != nil {
			return nil, fmt.Errorf(".typed_config: %w", err)
		}
		cs, err := f.Compile(msg, ctx)
		if err != nil {
			return nil, fmt.Errorf(".typed_config.%w", err)
		}
		return cs, nil
	}
}
