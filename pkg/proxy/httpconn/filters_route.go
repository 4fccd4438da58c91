package httpconn

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// routeFilterConfigs is router.Options.FilterConfig: it compiles a
// typed_per_filter_config entry with the RouteFactory of the filter its
// type selects, as Envoy's PerFilterConfigs does. The entry's type
// chooses the filter, whatever its key: a type no filter has is an error
// (Envoy's words), or, when the entry is optional, left out with a
// warning; so is the configuration of a filter without per-route
// configuration. Errors are the router's suffix of the entry's path: ": "
// and a message, or "." and the field path below the entry.
func routeFilterConfigs(reg *extension.Registry, ctx httpfilter.Context, rt RuntimeValues) func(string, *anypb.Any, bool) (any, error) {
	// A per-route configuration may name filters of its own (the
	// composite filter's CompositePerRoute), found as http_filters are.
	ctx.Extensions, ctx.LookupByName = reg, lookupByName(rt)
	return func(name string, a *anypb.Any, optional bool) (any, error) {
		typ := extension.TypeName(a.GetTypeUrl())
		var (
			ext extension.Extension
			ok  bool
		)
		if reg != nil {
			ext, ok = reg.Lookup(a.GetTypeUrl())
		}
		if !ok || ext.Category != httpFiltersCategory || ext.Disabled {
			if optional {
				ctx.Log.Info("optional per-route filter configuration ignored: no registered implementation", "filter", name, "type", typ)
				return nil, nil
			}
			return nil, fmt.Errorf(": Didn't find a registered implementation for '%s' with type URL: '%s'", name, typ)
		}
		rf, ok := ext.Factory.(httpfilter.RouteFactory)
		if !ok || ext.RouteConfig == nil {
			if optional {
				return nil, nil
			}
			return nil, fmt.Errorf(": The filter %s doesn't support virtual host or route specific configurations", name)
		}
		if want := string(proto.MessageName(ext.RouteConfig)); typ != want {
			return nil, fmt.Errorf(": the per-route configuration of %s is a %s, not a %s", ext.Name, want, typ)
		}
		msg, err := a.UnmarshalNew()
		if err != nil {
			return nil, fmt.Errorf(": %w", err)
		}
		c := ctx
		c.Name = name
		cfg, err := rf.CompileRoute(msg, c)
		if err != nil {
			// The filter's errors name the field below the entry.
			return nil, fmt.Errorf(".%w", err)
		}
		return cfg, nil
	}
}
