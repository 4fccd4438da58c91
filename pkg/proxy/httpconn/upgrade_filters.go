package httpconn

import (
	"errors"
	"fmt"
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// upgradeChains are the filter chains of the upgrade types that have their
// own (upgrade_configs[].filters), by lowercased type. Envoy runs an
// upgrade through its type's chain instead of http_filters, so that, for
// example, a buffering filter stays out of WebSockets; a type without
// filters runs http_filters.
type upgradeChains map[string]*filterChain

// buildUpgradeFilters compiles the filters of each upgrade_configs entry
// that has any, as http_filters are compiled (the router last). Errors
// name the field path.
func buildUpgradeFilters(cfgs []*hcmv3.HttpConnectionManager_UpgradeConfig, reg *extension.Registry, ctx httpfilter.Context, rt RuntimeValues) (upgradeChains, error) {
	var (
		chains upgradeChains
		errs   []error
	)
	for i, u := range cfgs {
		if len(u.GetFilters()) == 0 {
			continue
		}
		field := fmt.Sprintf("upgrade_configs[%d].filters", i)
		fc, err := buildFilters(field, u.GetFilters(), reg, ctx, rt)
		if err == nil && fc.startChildSpan {
			// The upstream span follows http_filters' router, whatever
			// the chain: a different setting here would be ignored.
			err = fmt.Errorf("%s[%d].typed_config.start_child_span: not supported by Outrigger in an upgrade's filter chain", field, len(u.GetFilters())-1)
		}
		if err == nil {
			err = upgradeUpstreamLog(field, len(u.GetFilters())-1, &fc)
		}
		if err == nil {
			err = upgradeRouterOptions(field, len(u.GetFilters())-1, &fc)
		}
		if err != nil {
			fc.close()
			errs = append(errs, err)
			continue
		}
		if chains == nil {
			chains = upgradeChains{}
		}
		// Duplicate types are refused by readUpgrades.
		chains[strings.ToLower(u.GetUpgradeType())] = &fc
	}
	if err := errors.Join(errs...); err != nil {
		chains.close()
		return nil, err
	}
	return chains, nil
}

// close closes the chains' filter configurations.
func (uc upgradeChains) close() {
	for _, fc := range uc {
		fc.close()
	}
}

// filterChain is the chain the stream runs: the upgrade type's own when
// the request asks for an upgrade the configuration allows (or one with
// no route, which the connection manager's entry allows) and the type
// has one, else http_filters.
func (s *stream) filterChain() *filterChain {
	if s.upg.typ != "" && len(s.m.upgradeFilters) > 0 {
		t := strings.ToLower(s.upg.typ)
		if fc := s.m.upgradeFilters[t]; fc != nil && (s.upg.admitted || s.m.cfg.upgrades[t]) {
			return fc
		}
	}
	return &s.m.filters
}
