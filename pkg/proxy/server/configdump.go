package server

import (
	"cmp"
	"maps"
	"slices"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
)

// ConfigDump implements admin.ConfigDumpSource as Envoy shows a
// configuration: the bootstrap, the clusters, the endpoints (with
// includeEDS, when there is a cluster), the listeners (static, then from
// discovery), the scoped routes (always empty), the route configurations
// inlined in HTTP connection managers, and the secrets, in that order.
// Listeners and the EDS clusters' endpoints arrive through discovery;
// every other resource is static and has no version_info (nor do the
// endpoints of static EDS clusters, as in Envoy). Secrets are not redacted here: the admin redacts
// them. Each call builds new messages, which the caller may modify.
func (s *Server) ConfigDump(includeEDS bool) []proto.Message {
	// Envoy keeps update times to the millisecond.
	loaded := timestamppb.New(s.start.Truncate(time.Millisecond))
	res := s.boot.GetStaticResources()
	dumps := []proto.Message{
		s.bootstrapDump(loaded),
		s.dynamicClustersDump(clustersDump(res.GetClusters(), loaded)),
	}
	if includeEDS && (len(res.GetClusters()) > 0 || s.cds != nil) {
		ed := endpointsDump(res.GetClusters(), s.eds.assignment)
		ed.DynamicEndpointConfigs = s.eds.dynamicDump()
		s.withLiveHealth(ed)
		dumps = append(dumps, ed)
	}
	ld, dynamic := s.listenersDump(res.GetListeners(), loaded)
	return append(dumps,
		ld,
		&adminv3.ScopedRoutesConfigDump{},
		s.dynamicRoutesDump(routesDump(append(slices.Clip(res.GetListeners()), dynamic...), loaded)),
		s.secretsDump(res.GetSecrets()),
	)
}

// InitDump implements admin.ConfigDumpSource: the listeners still warming,
// each with the route discovery targets it waits for, named as Envoy
// names its listener init managers and RDS init targets.
func (s *Server) InitDump() *adminv3.UnreadyTargetsDumps {
	out := &adminv3.UnreadyTargetsDumps{}
	for _, bl := range s.activeListeners() {
		names := bl.warm.unready()
		if len(names) == 0 {
			continue
		}
		d := &adminv3.UnreadyTargetsDumps_UnreadyTargetsDump{Name: "Listener-local-init-manager " + bl.Name()}
		d.TargetNames = names
		out.UnreadyTargetsDumps = append(out.UnreadyTargetsDumps, d)
	}
	return out
}

// bootstrapDump is the bootstrap as loaded (command-line overrides and
// --config-yaml merged), with the node completed as /server_info shows it.
func (s *Server) bootstrapDump(loaded *timestamppb.Timestamp) *adminv3.BootstrapConfigDump {
	b := proto.Clone(s.boot).(*bootstrapv3.Bootstrap)
	if b == nil {
		b = &bootstrapv3.Bootstrap{}
	}
	b.Node = s.node()
	return &adminv3.BootstrapConfigDump{Bootstrap: b, LastUpdated: loaded}
}

// clustersDump lists the static clusters as configured.
func clustersDump(clusters []*clusterv3.Cluster, loaded *timestamppb.Timestamp) *adminv3.ClustersConfigDump {
	d := &adminv3.ClustersConfigDump{}
	for _, c := range clusters {
		if a := pack(c); a != nil {
			d.StaticClusters = append(d.StaticClusters, &adminv3.ClustersConfigDump_StaticCluster{
				Cluster: a, LastUpdated: loaded,
			})
		}
	}
	return d
}

// dynamicClustersDump adds the clusters from discovery to d, as Envoy's
// dump shows them: the active ones and the warming ones, each with the
// version_info that brought it and when, and the version_info of the last
// accepted cluster discovery response.
func (s *Server) dynamicClustersDump(d *adminv3.ClustersConfigDump) *adminv3.ClustersConfigDump {
	if s.clusters == nil {
		return d
	}
	if s.cds != nil {
		d.VersionInfo = s.cds.Version()
	}
	// Without cluster discovery, the dynamic forward proxy's sub-clusters
	// are the only dynamic clusters, as in Envoy's dump.
	for _, dc := range s.clusters.Discovered() {
		e := &adminv3.ClustersConfigDump_DynamicCluster{
			VersionInfo: dc.Version,
			Cluster:     pack(dc.Config),
			LastUpdated: timestamppb.New(dc.LastUpdated.Truncate(time.Millisecond)),
		}
		if dc.Warming {
			d.DynamicWarmingClusters = append(d.DynamicWarmingClusters, e)
		} else {
			d.DynamicActiveClusters = append(d.DynamicActiveClusters, e)
		}
	}
	return d
}

// listenersDump lists the static listeners as configured, then the ones
// from discovery as Envoy does: one entry per name, in the order they came,
// with the listener in service (active_state), a replaced or removed one
// still draining its connections (draining_state), and the last refused
// update of that name (error_state). It also returns the configurations of
// the discovered listeners in service, whose inline routes the routes dump
// shows.
func (s *Server) listenersDump(static []*listenerv3.Listener, loaded *timestamppb.Timestamp) (*adminv3.ListenersConfigDump, []*listenerv3.Listener) {
	d := &adminv3.ListenersConfigDump{}
	for _, l := range static {
		if a := pack(l); a != nil {
			d.StaticListeners = append(d.StaticListeners, &adminv3.ListenersConfigDump_StaticListener{
				Listener: a, LastUpdated: loaded,
			})
		}
	}
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	if s.boot.GetDynamicResources().GetLdsConfig() == nil { // no listener discovery
		return d, nil
	}
	d.VersionInfo = s.lset.version
	byName := map[string]*adminv3.ListenersConfigDump_DynamicListener{}
	entry := func(name string) *adminv3.ListenersConfigDump_DynamicListener {
		if e, ok := byName[name]; ok {
			return e
		}
		e := &adminv3.ListenersConfigDump_DynamicListener{Name: name}
		byName[name] = e
		d.DynamicListeners = append(d.DynamicListeners, e)
		return e
	}
	var dynamic []*listenerv3.Listener
	for _, bl := range s.lset.active {
		if bl.dynamic {
			entry(bl.Name()).ActiveState = bl.dumpState()
			dynamic = append(dynamic, bl.config)
		}
	}
	for _, bl := range s.lset.draining {
		entry(bl.Name()).DrainingState = bl.dumpState()
	}
	for _, name := range slices.Sorted(maps.Keys(s.lset.failures)) {
		entry(name).ErrorState = proto.CloneOf(s.lset.failures[name])
	}
	return d, dynamic
}

// dumpState is a discovered listener's state in the listeners dump.
func (bl *builtListener) dumpState() *adminv3.ListenersConfigDump_DynamicListenerState {
	return &adminv3.ListenersConfigDump_DynamicListenerState{
		VersionInfo: bl.version,
		Listener:    pack(bl.config),
		LastUpdated: timestamppb.New(bl.lastUpdated.Truncate(time.Millisecond)),
	}
}

// routesDump lists the route configurations inlined in the listeners'
// HTTP connection managers: Envoy makes a static route provider for each,
// in every filter chain (the default one last).
func routesDump(listeners []*listenerv3.Listener, loaded *timestamppb.Timestamp) *adminv3.RoutesConfigDump {
	d := &adminv3.RoutesConfigDump{}
	for _, l := range listeners {
		chains := l.GetFilterChains()
		if dc := l.GetDefaultFilterChain(); dc != nil {
			chains = append(slices.Clip(chains), dc)
		}
		for _, fc := range chains {
			for _, f := range fc.GetFilters() {
				rc := inlineRouteConfig(f)
				if rc == nil {
					continue
				}
				if a := pack(rc); a != nil {
					d.StaticRouteConfigs = append(d.StaticRouteConfigs, &adminv3.RoutesConfigDump_StaticRouteConfig{
						RouteConfig: a, LastUpdated: loaded,
					})
				}
			}
		}
	}
	return d
}

// dynamicRoutesDump adds the route configurations from route discovery
// to d, each with its version_info and last_updated.
func (s *Server) dynamicRoutesDump(d *adminv3.RoutesConfigDump) *adminv3.RoutesConfigDump {
	d.DynamicRouteConfigs = s.rds.dump()
	return d
}

// inlineRouteConfig returns the route_config of an HTTP connection manager
// filter, or nil for other filters and for managers using discovery.
func inlineRouteConfig(f *listenerv3.Filter) proto.Message {
	tc := f.GetTypedConfig()
	if tc == nil || !tc.MessageIs(&hcmv3.HttpConnectionManager{}) {
		return nil
	}
	var hcm hcmv3.HttpConnectionManager
	if err := tc.UnmarshalTo(&hcm); err != nil {
		return nil // validation decoded it already; nothing to show otherwise
	}
	if rc := hcm.GetRouteConfig(); rc != nil {
		return rc
	}
	return nil
}

// secretsDump lists the static secrets, grouped by kind as Envoy's secret
// manager keeps them: TLS certificates, validation contexts, session ticket
// keys, then generic secrets; then the secrets from files.
func (s *Server) secretsDump(secrets []*tlsv3.Secret) *adminv3.SecretsConfigDump {
	kind := func(s *tlsv3.Secret) int {
		switch s.GetType().(type) {
		case *tlsv3.Secret_TlsCertificate:
			return 0
		case *tlsv3.Secret_ValidationContext:
			return 1
		case *tlsv3.Secret_SessionTicketKeys:
			return 2
		default:
			return 3
		}
	}
	sorted := slices.Clone(secrets)
	slices.SortStableFunc(sorted, func(a, b *tlsv3.Secret) int { return cmp.Compare(kind(a), kind(b)) })
	d := &adminv3.SecretsConfigDump{}
	for _, sec := range sorted {
		if a := pack(sec); a != nil {
			d.StaticSecrets = append(d.StaticSecrets, &adminv3.SecretsConfigDump_StaticSecret{
				Name: sec.GetName(), Secret: a,
			})
		}
	}
	d.DynamicActiveSecrets, d.DynamicWarmingSecrets = s.secrets.dynamicDump()
	return d
}

// endpointsDump shows each static cluster's endpoints as Envoy's endpoint
// dump does: one ClusterLoadAssignment per cluster, named by the EDS
// service name or the cluster name, with the endpoints grouped by priority
// and locality. Health is the configured health_status (no active health
// check result is known from the configuration). discovered returns an
// EDS cluster's last load assignment, nil for the others.
func endpointsDump(clusters []*clusterv3.Cluster, discovered func(cluster string) *endpointv3.ClusterLoadAssignment) *adminv3.EndpointsConfigDump {
	d := &adminv3.EndpointsConfigDump{}
	for _, c := range clusters {
		if la := discovered(c.GetName()); la != nil {
			// An EDS cluster's hosts are its last load assignment's; the
			// cluster is static, so it stays a static endpoint config,
			// as in Envoy.
			c = proto.CloneOf(c)
			c.LoadAssignment = la
		}
		if a := pack(loadAssignmentDump(c)); a != nil {
			d.StaticEndpointConfigs = append(d.StaticEndpointConfigs, &adminv3.EndpointsConfigDump_StaticEndpointConfig{
				EndpointConfig: a,
			})
		}
	}
	return d
}

// loadAssignmentDump rebuilds a cluster's load assignment the way Envoy
// reports its hosts.
func loadAssignmentDump(c *clusterv3.Cluster) *endpointv3.ClusterLoadAssignment {
	la := c.GetLoadAssignment()
	name := c.GetEdsClusterConfig().GetServiceName()
	if name == "" {
		name = c.GetName()
	}
	factor := uint32(lb.DefaultOverprovisioningFactor)
	if f := la.GetPolicy().GetOverprovisioningFactor(); f != nil {
		factor = f.GetValue()
	}
	out := &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Policy: &endpointv3.ClusterLoadAssignment_Policy{
			OverprovisioningFactor: wrapperspb.UInt32(factor),
		},
	}
	localityWeights := c.GetCommonLbConfig().GetLocalityWeightedLbConfig() != nil

	// Envoy groups hosts per priority, then per locality: configuration
	// entries naming the same priority and locality are one group.
	byPriority := slices.Clone(la.GetEndpoints())
	slices.SortStableFunc(byPriority, func(a, b *endpointv3.LocalityLbEndpoints) int {
		return cmp.Compare(a.GetPriority(), b.GetPriority())
	})
	for _, group := range byPriority {
		var dst *endpointv3.LocalityLbEndpoints
		for _, g := range out.Endpoints {
			if g.GetPriority() == group.GetPriority() && proto.Equal(g.GetLocality(), group.GetLocality()) {
				dst = g
			}
		}
		for _, e := range group.GetLbEndpoints() {
			lbe := lbEndpointDump(e)
			if lbe == nil {
				continue
			}
			if dst == nil {
				// Envoy always prints the locality, {} when there is none.
				dst = &endpointv3.LocalityLbEndpoints{Priority: group.GetPriority(), Locality: &corev3.Locality{}}
				if group.GetLocality() != nil {
					dst.Locality = proto.Clone(group.GetLocality()).(*corev3.Locality)
				}
				if localityWeights && group.GetLoadBalancingWeight() != nil {
					dst.LoadBalancingWeight = wrapperspb.UInt32(group.GetLoadBalancingWeight().GetValue())
				}
				out.Endpoints = append(out.Endpoints, dst)
			}
			dst.LbEndpoints = append(dst.LbEndpoints, lbe)
		}
	}
	return out
}

// lbEndpointDump reports one configured endpoint as Envoy reports a host:
// its address, hostname, health-check hostname (and port when it differs),
// coarse health, metadata and weight (1 unless configured). Named
// endpoints, which only discovery resolves, are left out.
func lbEndpointDump(e *endpointv3.LbEndpoint) *endpointv3.LbEndpoint {
	ep := e.GetEndpoint()
	if ep == nil {
		return nil
	}
	sa := ep.GetAddress().GetSocketAddress()
	hc := &endpointv3.Endpoint_HealthCheckConfig{Hostname: ep.GetHealthCheckConfig().GetHostname()}
	if hc.Hostname == "" {
		hc.Hostname = ep.GetHostname()
	}
	if p := ep.GetHealthCheckConfig().GetPortValue(); p != 0 && p != sa.GetPortValue() {
		hc.PortValue = p
	}
	out := &endpointv3.LbEndpoint{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address:           addressDump(ep.GetAddress()),
			HealthCheckConfig: hc,
			Hostname:          ep.GetHostname(),
		}},
		HealthStatus:        coarseHealth(e.GetHealthStatus()),
		Metadata:            &corev3.Metadata{},
		LoadBalancingWeight: wrapperspb.UInt32(1),
	}
	if md := e.GetMetadata(); md != nil {
		out.Metadata = proto.Clone(md).(*corev3.Metadata)
	}
	if w := e.GetLoadBalancingWeight(); w != nil {
		out.LoadBalancingWeight = wrapperspb.UInt32(w.GetValue())
	}
	return out
}

// addressDump keeps what Envoy prints of a host address: IP and port of a
// socket address, or the pipe path.
func addressDump(a *corev3.Address) *corev3.Address {
	if sa := a.GetSocketAddress(); sa != nil {
		return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       sa.GetAddress(),
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: sa.GetPortValue()},
		}}}
	}
	if a == nil {
		return nil
	}
	return proto.Clone(a).(*corev3.Address)
}

// coarseHealth maps a configured health status to the three states Envoy
// reports a host in.
func coarseHealth(h corev3.HealthStatus) corev3.HealthStatus {
	switch h {
	case corev3.HealthStatus_UNHEALTHY, corev3.HealthStatus_DRAINING, corev3.HealthStatus_TIMEOUT:
		return corev3.HealthStatus_UNHEALTHY
	case corev3.HealthStatus_DEGRADED:
		return corev3.HealthStatus_DEGRADED
	default:
		return corev3.HealthStatus_HEALTHY
	}
}

// pack wraps m in an Any. The messages come from a validated bootstrap, so
// packing cannot fail; a message that does anyway is left out of the dump
// rather than failing the whole dump.
func pack(m proto.Message) *anypb.Any {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil
	}
	return a
}
