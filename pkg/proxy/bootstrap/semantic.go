package bootstrap

import (
	"net"
	"strconv"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// Type names the semantic checks recognise in typed_config values.
var (
	hcmTypeName    = string(proto.MessageName(&hcmv3.HttpConnectionManager{}))
	routerTypeName = string(proto.MessageName(&routerv3.Router{}))
	// tcpProxyTypeName is tcp_proxy's configuration, a terminal filter.
	tcpProxyTypeName = "envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"
	// httpFiltersCategory is the category of the HTTP filters.
	httpFiltersCategory = "envoy.filters.http"
)

// terminalNetworkFilters are the network filters that consume the
// connection, so they must end their filter chain (Envoy's rule). It is an
// immutable table.
var terminalNetworkFilters = map[string]string{
	hcmTypeName:      "proxy.filters.network.http_connection_manager",
	tcpProxyTypeName: "proxy.filters.network.tcp_proxy",
}

// semanticChecker holds the rules that protoc-gen-validate annotations
// cannot express, mostly relations between fields: unique names and
// addresses, required ordering of filters. Envoy rejects the same
// configurations when it builds them.
type semanticChecker struct {
	// ext resolves HTTP filters named without typed_config.
	ext  *extension.Registry
	errs []error
}

// semanticErrors runs every semantic check on b.
func semanticErrors(b *bootstrapv3.Bootstrap, ext *extension.Registry) []error {
	s := semanticChecker{ext: ext}
	s.admin(b)
	s.runtime(b.GetLayeredRuntime())
	s.listeners(b.GetStaticResources().GetListeners(), "static_resources.listeners")
	s.dynamicResources(b.GetDynamicResources())
	s.edsClusters(b)
	s.loadStatsConfig(b.GetClusterManager().GetLoadStatsConfig())
	s.watchdogs(b)
	if _, err := ApplicationLogFormat(b); err != nil {
		s.errs = append(s.errs, err)
	}
	return s.errs
}

// fail records one problem.
func (s *semanticChecker) fail(path, format string, args ...any) {
	s.errs = append(s.errs, fieldErrorf(path, format, args...))
}

// admin requires an address for the admin interface when admin is present:
// an admin block without one is almost certainly a mistake, and Outrigger
// has no other way to expose the interface.
func (s *semanticChecker) admin(b *bootstrapv3.Bootstrap) {
	if b.GetAdmin() != nil && b.GetAdmin().GetAddress() == nil {
		s.fail("admin.address", "required when admin is set")
	}
}

// runtime checks the layer list: unique names (they key /runtime's output),
// a config source for each RTDS layer and at most one admin layer (where
// /runtime_modify writes).
func (s *semanticChecker) runtime(rt *bootstrapv3.LayeredRuntime) {
	const base = "layered_runtime.layers"
	names := map[string]int{}
	adminLayer := -1
	for i, l := range rt.GetLayers() {
		p := indexPath(base, i)
		if prev, dup := names[l.GetName()]; dup {
			s.fail(childPath(p, "name"), "duplicate layer name %q (also %s)", l.GetName(), indexPath(base, prev))
		} else {
			names[l.GetName()] = i
		}
		if rtds := l.GetRtdsLayer(); rtds != nil && rtds.GetRtdsConfig() == nil {
			s.fail(childPath(p, "rtds_layer.rtds_config"), "required: an RTDS layer needs the config source of its Runtime resource")
		}
		if l.GetAdminLayer() == nil {
			continue
		}
		if adminLayer >= 0 {
			s.fail(childPath(p, "admin_layer"), "at most one admin layer may be specified (also %s)", indexPath(base, adminLayer))
			continue
		}
		adminLayer = i
	}
}

// listeners checks the static listeners: each needs an address, unique
// names and addresses, at least one filter chain, and sound chains.
func (s *semanticChecker) listeners(ls []*listenerv3.Listener, base string) {
	names := map[string]int{}
	addrs := map[string]int{}
	for i, l := range ls {
		p := indexPath(base, i)
		if name := l.GetName(); name != "" {
			if prev, dup := names[name]; dup {
				s.fail(childPath(p, "name"), "duplicate listener name %q (also %s)", name, indexPath(base, prev))
			} else {
				names[name] = i
			}
		}
		if sa := l.GetAddress().GetSocketAddress(); sa != nil && sa.GetPortValue() != 0 {
			// Port 0 picks a fresh port per listener, so only fixed
			// ports can clash.
			addr := net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
			// A TCP and a UDP listener may share a port, as in Envoy.
			key := addr + "/" + sa.GetProtocol().String()
			if prev, dup := addrs[key]; dup {
				s.fail(childPath(p, "address"), "address %s is already used by %s", addr, indexPath(base, prev))
			} else {
				addrs[key] = i
			}
		}
		s.listener(l, p)
	}
}

// listener checks one listener on its own, at path p ("" for a listener
// from discovery): it needs an address, at least one filter chain, and
// sound chains.
func (s *semanticChecker) listener(l *listenerv3.Listener, p string) {
	if l.GetAddress() == nil && l.GetInternalListener() == nil {
		// An internal listener has none (listener.Build refuses one).
		s.fail(childPath(p, "address"), "required: a listener must have an address")
	}
	udp := l.GetAddress().GetSocketAddress().GetProtocol() == corev3.SocketAddress_UDP
	switch {
	case udp && (len(l.GetFilterChains()) > 0 || l.GetDefaultFilterChain() != nil):
		// A raw UDP listener's datagrams go to its UDP listener filters.
		s.fail(childPath(p, "filter_chains"), "a UDP listener takes no filter chains; its listener_filters (envoy.filters.udp_listener.udp_proxy, envoy.filters.udp.dns_filter) handle datagrams")
	case udp:
		if len(l.GetListenerFilters()) == 0 {
			s.fail(childPath(p, "listener_filters"), "a UDP listener needs a UDP listener filter (envoy.filters.udp_listener.udp_proxy or envoy.filters.udp.dns_filter)")
		}
	case len(l.GetFilterChains()) == 0 && l.GetDefaultFilterChain() == nil:
		s.fail(childPath(p, "filter_chains"), "a listener must have at least one filter chain")
	}
	for j, fc := range l.GetFilterChains() {
		s.filterChain(fc, indexPath(childPath(p, "filter_chains"), j))
	}
	if dc := l.GetDefaultFilterChain(); dc != nil {
		s.filterChain(dc, childPath(p, "default_filter_chain"))
	}
}

// filterChain checks that every filter names its type and that a terminal
// filter comes last.
func (s *semanticChecker) filterChain(fc *listenerv3.FilterChain, path string) {
	filters := fc.GetFilters()
	for i, f := range filters {
		p := indexPath(childPath(path, "filters"), i)
		tc := f.GetTypedConfig()
		if tc.GetTypeUrl() == "" {
			s.fail(childPath(p, "typed_config"), "required: the filter's type selects its implementation")
			continue
		}
		typeName := extension.TypeName(tc.GetTypeUrl())
		if name, terminal := terminalNetworkFilters[typeName]; terminal && i != len(filters)-1 {
			s.fail(p, "%s is a terminal filter and must be the last in the filter chain", name)
		}
		if typeName == hcmTypeName {
			var hcm hcmv3.HttpConnectionManager
			if tc.UnmarshalTo(&hcm) == nil {
				s.httpConnectionManager(&hcm, childPath(p, "typed_config"))
			}
		}
	}
}

// httpConnectionManager checks the HTTP filter list, which must end with
// the router (the filter that forwards or answers the request), and the
// inline route configuration.
func (s *semanticChecker) httpConnectionManager(hcm *hcmv3.HttpConnectionManager, path string) {
	filters := hcm.GetHttpFilters()
	base := childPath(path, "http_filters")
	if len(filters) == 0 {
		s.fail(base, "must end with the router filter (proxy.filters.http.router)")
	}
	for i, f := range filters {
		p := indexPath(base, i)
		var isRouter bool
		if tc := f.GetTypedConfig(); tc.GetTypeUrl() != "" || len(tc.GetValue()) > 0 {
			isRouter = isType(tc, routerTypeName)
		} else {
			// Named only: Envoy looks the name up (its runtime guard
			// envoy.reloadable_features.no_extension_lookup_by_name
			// off, the default before 1.22), and so does Outrigger.
			x, ok := s.ext.ByName(httpFiltersCategory, f.GetName())
			if !ok {
				s.fail(childPath(p, "name"), "filter %q without typed_config is not a registered HTTP filter (see docs/extensions.md)", f.GetName())
				continue
			}
			isRouter = extension.TypeName(x.TypeURLs[0]) == routerTypeName
		}
		switch {
		case isRouter && i != len(filters)-1:
			s.fail(p, "the router filter must be the last HTTP filter")
		case !isRouter && i == len(filters)-1:
			s.fail(p, "the last HTTP filter must be the router filter (proxy.filters.http.router)")
		}
	}
	if rc := hcm.GetRouteConfig(); rc != nil {
		s.routeConfig(rc, childPath(path, "route_config"))
	}
	if rds := hcm.GetRds(); rds != nil {
		switch cs := rds.GetConfigSource(); {
		case cs.GetApiConfigSource() != nil:
			s.apiConfigSource(cs.GetApiConfigSource(), childPath(path, "rds.config_source.api_config_source"), true)
		case cs.GetAds() == nil:
			s.fail(childPath(path, "rds.config_source"), "ads: {} or api_config_source is required: Outrigger takes route configurations from a gRPC stream or REST only")
		}
		if rds.GetRouteConfigName() == "" {
			s.fail(childPath(path, "rds.route_config_name"), "required")
		}
	}
}

// routeConfig checks that no domain is served by two virtual hosts: the
// match would be ambiguous. Domains compare case-insensitively, as hosts do.
func (s *semanticChecker) routeConfig(rc *routev3.RouteConfiguration, path string) {
	seen := map[string]string{}
	for i, vh := range rc.GetVirtualHosts() {
		vp := indexPath(childPath(path, "virtual_hosts"), i)
		for j, d := range vh.GetDomains() {
			p := indexPath(childPath(vp, "domains"), j)
			key := strings.ToLower(d)
			if prev, dup := seen[key]; dup {
				s.fail(p, "duplicate domain %q (also %s)", d, prev)
				continue
			}
			seen[key] = p
		}
	}
}

// isType reports whether a holds a message of the given full name.
func isType(a *anypb.Any, name string) bool {
	return extension.TypeName(a.GetTypeUrl()) == name
}
