package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// nodeID is the sidecar's node id, under which the snapshots are set.
const nodeID = "xds-bench"

// controlPlane is go-control-plane's ADS server with its snapshot cache on
// a loopback port. It notes when it last sent a response of each type, so
// that a figure can be split into the management server's part (building
// and marshalling the response) and the sidecar's.
type controlPlane struct {
	port  int
	cache cachev3.SnapshotCache
	srv   *grpc.Server

	mu   sync.Mutex
	sent map[string]time.Time
}

func startControlPlane() (*controlPlane, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{
		port:  ln.Addr().(*net.TCPAddr).Port,
		cache: cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil),
		sent:  map[string]time.Time{},
	}
	cp.srv = grpc.NewServer(grpc.MaxConcurrentStreams(16), grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, timedStream{ServerStream: ss, cp: cp})
	}))
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(cp.srv, serverv3.NewServer(context.Background(), cp.cache, nil))
	go func() { _ = cp.srv.Serve(ln) }()
	return cp, nil
}

func (cp *controlPlane) stop() { cp.srv.Stop() }

// timedStream records when each response went out.
type timedStream struct {
	grpc.ServerStream
	cp *controlPlane
}

func (t timedStream) SendMsg(msg any) error {
	err := t.ServerStream.SendMsg(msg)
	if resp, ok := msg.(*discoveryv3.DiscoveryResponse); ok && err == nil {
		t.cp.mu.Lock()
		t.cp.sent[resp.GetTypeUrl()] = time.Now()
		t.cp.mu.Unlock()
	}
	return err
}

// sentAt is when the last response of typeURL went out.
func (cp *controlPlane) sentAt(typeURL string) time.Time {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.sent[typeURL]
}

// config is the sidecar's dynamic configuration, with each type's
// version: a type whose version did not change is not sent again, so that
// a figure measures the one type that changed.
type config struct {
	listeners []*listenerv3.Listener
	clusters  []*clusterv3.Cluster
	routes    []*routev3.RouteConfiguration
	endpoints []*endpointv3.ClusterLoadAssignment

	versions map[resourcev3.Type]string
}

// bump gives typeURL a new version.
func (c *config) bump(typeURL resourcev3.Type) {
	if c.versions == nil {
		c.versions = map[resourcev3.Type]string{}
	}
	n, _ := strconv.Atoi(c.versions[typeURL])
	c.versions[typeURL] = strconv.Itoa(n + 1)
}

// set makes cfg the node's configuration.
func (cp *controlPlane) set(cfg config) error {
	snap := &cachev3.Snapshot{}
	// Every type is present, possibly empty: a wildcard subscription to a
	// type missing from the snapshot would never be answered.
	add := func(typeURL resourcev3.Type, items []cachetypes.Resource) {
		v := cfg.versions[typeURL]
		if v == "" {
			v = "0"
		}
		snap.Resources[cachev3.GetResponseType(typeURL)] = cachev3.NewResources(v, items)
	}
	add(resourcev3.ListenerType, resources(cfg.listeners))
	add(resourcev3.ClusterType, resources(cfg.clusters))
	add(resourcev3.RouteType, resources(cfg.routes))
	add(resourcev3.EndpointType, resources(cfg.endpoints))
	return cp.cache.SetSnapshot(context.Background(), nodeID, snap)
}

// resources are rs as the cache's resources.
func resources[T cachetypes.Resource](rs []T) []cachetypes.Resource {
	out := make([]cachetypes.Resource, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// adsSource is the config source {ads: {}, resource_api_version: V3}.
func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// edsCluster is an EDS cluster whose load assignment is named as it is.
func edsCluster(name string, connectTimeout time.Duration) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		ConnectTimeout:       durationpb.New(connectTimeout),
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: adsSource()},
	}
}

// socketAddress is host:port as an Address.
func socketAddress(host string, port int) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
}

// loadAssignment is name's load assignment of the endpoints, one locality.
func loadAssignment(name string, eps ...*corev3.Address) *endpointv3.ClusterLoadAssignment {
	lb := make([]*endpointv3.LbEndpoint, len(eps))
	for i, a := range eps {
		lb[i] = &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: a}}}
	}
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints:   []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lb}},
	}
}

// manyAddresses are n distinct loopback addresses on port, from
// 127.1.0.0 upwards, skipping the first skip.
func manyAddresses(n, skip, port int) []*corev3.Address {
	out := make([]*corev3.Address, n)
	for i := range n {
		j := i + skip
		out[i] = socketAddress(fmt.Sprintf("127.%d.%d.%d", 1+j/65536, j/256%256, j%256), port)
	}
	return out
}

// rdsListener is a listener on 127.0.0.1:port whose connection manager
// (stat prefix "ingress") takes route configuration "routes" over ADS.
func rdsListener(port int) (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "ingress",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: "routes", ConfigSource: adsSource(),
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		return nil, err
	}
	return &listenerv3.Listener{
		Name:    "ingress",
		Address: socketAddress("127.0.0.1", port),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}}}},
	}, nil
}

// routeTable is route configuration "routes": vhosts virtual hosts
// h<i>.example.com each routing to cluster other, then a catch-all one
// routing every request to cluster main.
func routeTable(vhosts int, main, other string) *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: "routes"}
	for i := range vhosts {
		rc.VirtualHosts = append(rc.VirtualHosts, virtualHost(fmt.Sprintf("h%d", i), fmt.Sprintf("h%d.example.com", i), other))
	}
	rc.VirtualHosts = append(rc.VirtualHosts, virtualHost("all", "*", main))
	return rc
}

// virtualHost routes every request for domain to cluster.
func virtualHost(name, domain, cluster string) *routev3.VirtualHost {
	return &routev3.VirtualHost{
		Name:    name,
		Domains: []string{domain},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
		}},
	}
}
