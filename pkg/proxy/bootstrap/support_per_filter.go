package bootstrap

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// filterConfigName is the wrapper of a per-filter configuration that adds
// is_optional and disabled.
var filterConfigName = string(proto.MessageName(&routev3.FilterConfig{}))

// perFilterConfig checks one typed_per_filter_config value as Envoy
// resolves it: its type selects the filter (the key only names the
// configured filter it applies to), which must be an HTTP filter that
// takes per-route configuration, of its per-route configuration type. A
// FilterConfig wrapper is looked through: disabled needs no
// configuration, an empty config only enables the filter, and an
// is_optional one of a filter Outrigger does not have is ignored, as
// Envoy ignores it. The connection manager reports the rest (a wrapper
// without config) when it compiles the routes.
func (c *supportChecker) perFilterConfig(m protoreflect.Message, path string) {
	a, ok := c.typedAny(m, path)
	if !ok {
		return
	}
	if extension.TypeName(a.GetTypeUrl()) != filterConfigName {
		c.routeFilterConfig(a, path, false)
		return
	}
	var fc routev3.FilterConfig
	if err := a.UnmarshalTo(&fc); err != nil {
		c.unsupported = append(c.unsupported, fieldErrorf(path, "decode %s: %v", filterConfigName, err))
		return
	}
	if fc.GetDisabled() || fc.GetConfig() == nil || fc.GetConfig().GetTypeUrl() == "" {
		return
	}
	c.routeFilterConfig(fc.GetConfig(), childPath(path, "config"), fc.GetIsOptional())
}

// routeFilterConfig checks a per-route filter configuration (see
// perFilterConfig); optional ones of unknown types pass.
func (c *supportChecker) routeFilterConfig(a *anypb.Any, path string, optional bool) {
	ext, ok := c.ext.Lookup(a.GetTypeUrl())
	typ := extension.TypeName(a.GetTypeUrl())
	switch {
	case (!ok || ext.Category != httpFiltersCategory || ext.Disabled) && optional:
		return
	case !ok || ext.Category != httpFiltersCategory:
		c.unsupported = append(c.unsupported, fieldErrorf(path, "HTTP filter type %q is not supported by Outrigger", typ))
		return
	case ext.Disabled:
		c.unsupported = append(c.unsupported, fieldErrorf(path, "extension %q is disabled by --disable-extensions", ext.Name))
		return
	case ext.RouteConfig == nil && optional:
		return
	case ext.RouteConfig == nil:
		c.unsupported = append(c.unsupported, fieldErrorf(path, "the filter %s takes no per-route configuration", ext.Name))
		return
	case typ != string(proto.MessageName(ext.RouteConfig)):
		c.unsupported = append(c.unsupported, fieldErrorf(path, "the per-route configuration of %s is a %s, not a %s", ext.Name, proto.MessageName(ext.RouteConfig), typ))
		return
	}
	c.anyContents(a, path)
}
