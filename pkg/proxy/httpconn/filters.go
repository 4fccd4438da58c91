package httpconn

import (
	"errors"
	"fmt"
	"strings"

	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
)

// The filter names accepted when a filter has no typed_config, in both
// spellings (the type URL decides when there is one).
const (
	routerFilterName = "filters.http.router"
)

// filterChain is the compiled http_filters list. The router is always the
// last filter; health_check is the only other one Outrigger implements.
type filterChain struct {
	// healthCheck is set when a health_check filter comes before the
	// router.
	healthCheck *healthCheck
}

// buildFilters compiles http_filters. Filters are recognised by the type
// of their typed_config, as Envoy resolves them, so any name works; a
// filter without typed_config must be named like the router. An empty
// list means the router alone. Errors name the field path.
func buildFilters(filters []*hcmv3.HttpFilter) (filterChain, error) {
	var fc filterChain
	for i, f := range filters {
		path := fmt.Sprintf("http_filters[%d]", i)
		last := i == len(filters)-1
		if f.GetDisabled() {
			// A disabled filter is configured but not run (Envoy lets
			// routes re-enable it; Outrigger's routes cannot).
			if last {
				return fc, fmt.Errorf("%s.disabled: the router, the last filter, cannot be disabled", path)
			}
			continue
		}
		kind, msg, err := filterKind(f)
		if err != nil {
			return fc, fmt.Errorf("%s.%w", path, err)
		}
		switch kind {
		case "router":
			if !last {
				return fc, fmt.Errorf("%s: the router filter is terminal and must be the last filter", path)
			}
		case "health_check":
			if last {
				return fc, fmt.Errorf("%s: the last filter must be the router, a terminal filter", path)
			}
			if fc.healthCheck != nil {
				return fc, fmt.Errorf("%s: only one health_check filter is supported by Outrigger", path)
			}
			hc, err := newHealthCheck(msg.(*healthcheckv3.HealthCheck))
			if err != nil {
				return fc, fmt.Errorf("%s.typed_config.%w", path, err)
			}
			fc.healthCheck = hc
		}
	}
	return fc, nil
}

// filterKind tells which filter f configures and decodes its typed_config.
func filterKind(f *hcmv3.HttpFilter) (string, proto.Message, error) {
	tc := f.GetTypedConfig()
	if tc == nil {
		if f.GetConfigDiscovery() != nil {
			return "", nil, errors.New("config_discovery: not supported by Outrigger")
		}
		if sameFilterName(f.GetName(), routerFilterName) {
			return "router", &routerv3.Router{}, nil
		}
		return "", nil, fmt.Errorf("name: filter %q without typed_config is not supported by Outrigger", f.GetName())
	}
	msg, err := tc.UnmarshalNew()
	if err != nil {
		return "", nil, fmt.Errorf("typed_config: %w", err)
	}
	switch msg.(type) {
	case *routerv3.Router:
		return "router", msg, nil
	case *healthcheckv3.HealthCheck:
		return "health_check", msg, nil
	}
	return "", nil, fmt.Errorf("typed_config: filter type %s is not supported by Outrigger", proto.MessageName(msg))
}

// sameFilterName compares a configured name with a known one written
// without its envoy./proxy. prefix.
func sameFilterName(name, known string) bool {
	for _, prefix := range []string{"envoy.", "proxy."} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest == known {
			return true
		}
	}
	return false
}
