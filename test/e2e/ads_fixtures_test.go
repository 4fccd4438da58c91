package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	// The typed configs of the listeners the management server sends, and
	// of the xds cluster, for reading /config_dump.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// adsNodeID is the node id of the sidecars of the ADS specs: the snapshot
// cache keys its snapshots by it.
const adsNodeID = "ads-e2e"

// adsControlPlaneID is the control_plane.identifier of the management
// server's responses.
const adsControlPlaneID = "e2e-management-server"

// managementServer is go-control-plane's xDS server with its snapshot
// cache, on a loopback port, recording every request it receives.
type managementServer struct {
	port  int
	cache cachev3.SnapshotCache

	mu       sync.Mutex
	grpc     *grpc.Server
	requests []*discoveryv3.DiscoveryRequest
	// deltaRequests are the requests of incremental streams.
	deltaRequests []*discoveryv3.DeltaDiscoveryRequest
	// methods are the gRPC methods of the streams opened, in order.
	methods []string
}

// startManagementServer serves ADS on a new loopback port until the spec
// ends.
func startManagementServer() *managementServer {
	GinkgoHelper()
	m := &managementServer{cache: newADSCache()}
	m.serve(0)
	DeferCleanup(m.stop)
	return m
}

// serve listens on port (0 picks one) and serves the cache.
func (m *managementServer) serve(port int) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	Expect(err).NotTo(HaveOccurred())
	m.port = ln.Addr().(*net.TCPAddr).Port
	xds := serverv3.NewServer(context.Background(), m.cache, nil)
	// Requests are recorded as they arrive on the wire: the server fills
	// a missing node in before its callbacks see a request.
	srv := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		m.mu.Lock()
		m.methods = append(m.methods, info.FullMethod)
		m.mu.Unlock()
		return handler(srv, recordingStream{ServerStream: ss, m: m})
	}))
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, xds)
	// Each type's own service too, for config sources with an
	// api_config_source.
	clusterservice.RegisterClusterDiscoveryServiceServer(srv, xds)
	listenerservice.RegisterListenerDiscoveryServiceServer(srv, xds)
	routeservice.RegisterRouteDiscoveryServiceServer(srv, xds)
	endpointservice.RegisterEndpointDiscoveryServiceServer(srv, xds)
	secretservice.RegisterSecretDiscoveryServiceServer(srv, xds)
	m.mu.Lock()
	m.grpc = srv
	m.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// recordingStream records the discovery requests a stream receives.
type recordingStream struct {
	grpc.ServerStream
	m *managementServer
}

func (r recordingStream) RecvMsg(msg any) error {
	err := r.ServerStream.RecvMsg(msg)
	if err != nil {
		return err
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	switch req := msg.(type) {
	case *discoveryv3.DiscoveryRequest:
		r.m.requests = append(r.m.requests, proto.CloneOf(req))
	case *discoveryv3.DeltaDiscoveryRequest:
		r.m.deltaRequests = append(r.m.deltaRequests, proto.CloneOf(req))
	}
	return nil
}

// SendMsg names the management server in every response, as
// go-control-plane's server does not.
func (r recordingStream) SendMsg(msg any) error {
	switch resp := msg.(type) {
	case *discoveryv3.DiscoveryResponse:
		resp = proto.CloneOf(resp)
		resp.ControlPlane = &corev3.ControlPlane{Identifier: adsControlPlaneID}
		msg = resp
	case *discoveryv3.DeltaDiscoveryResponse:
		resp = proto.CloneOf(resp)
		resp.ControlPlane = &corev3.ControlPlane{Identifier: adsControlPlaneID}
		msg = resp
	}
	return r.ServerStream.SendMsg(msg)
}

// stop ends the server and its streams.
func (m *managementServer) stop() {
	m.mu.Lock()
	srv := m.grpc
	m.grpc = nil
	m.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// restart stops the server and serves again on the same port, with a new
// cache holding only snap: a management server that lost its state.
func (m *managementServer) restart(snap *cachev3.Snapshot) {
	GinkgoHelper()
	m.stop()
	m.cache = newADSCache()
	m.set(snap)
	m.serve(m.port)
}

// newADSCache is a snapshot cache in ADS mode, as a control plane
// serving the aggregated stream runs it, keyed by node id.
func newADSCache() cachev3.SnapshotCache {
	return cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
}

// set makes snap the node's configuration.
func (m *managementServer) set(snap *cachev3.Snapshot) {
	GinkgoHelper()
	Expect(m.cache.SetSnapshot(context.Background(), adsNodeID, snap)).To(Succeed())
}

// streamMethods returns the gRPC methods of the streams opened so far.
func (m *managementServer) streamMethods() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.methods)
}

// received returns the requests received so far.
func (m *managementServer) received() []*discoveryv3.DiscoveryRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// ldsSnapshot is a snapshot of version holding the listeners.
func ldsSnapshot(version string, ls ...*listenerv3.Listener) *cachev3.Snapshot {
	GinkgoHelper()
	return adsSnapshot(version, ls)
}

// listenerProto is a listenerDef (the fixtures' YAML) as a Listener.
func listenerProto(l listenerDef) *listenerv3.Listener {
	GinkgoHelper()
	js, err := yaml.YAMLToJSON([]byte(l.flowYAML("")))
	Expect(err).NotTo(HaveOccurred())
	out := &listenerv3.Listener{}
	Expect(protojson.Unmarshal(js, out)).To(Succeed())
	return out
}

// adsBootstrap is a bootstrap whose listeners come over ADS from the
// management server on xdsPort, reached through the static HTTP/2 cluster
// "xds"; ldsFields are extra dynamic_resources.lds_config fields (a YAML
// flow mapping), and more are further static clusters.
func adsBootstrap(xdsPort int, ldsFields string, more ...map[string]any) string {
	GinkgoHelper()
	clusters := []any{proxyCluster{Name: "xds", Port: xdsPort, Extra: h2cOptions()}.object()}
	for _, c := range more {
		clusters = append(clusters, c)
	}
	b := map[string]any{
		"node":             map[string]any{"id": adsNodeID, "cluster": "e2e"},
		"admin":            map[string]any{"address": socketAddress(0)},
		"static_resources": map[string]any{"clusters": clusters},
		"dynamic_resources": map[string]any{
			"ads_config": flowYAML(`{api_type: GRPC, transport_api_version: V3, set_node_on_first_message_only: true, grpc_services: [{envoy_grpc: {cluster_name: xds}}]}`),
			"lds_config": merge(map[string]any{"ads": map[string]any{}, "resource_api_version": "V3"}, ldsFields),
		},
	}
	out, err := json.Marshal(b)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// edsCluster is a static EDS cluster whose endpoints come over ADS under
// the service name service; edsFields are extra eds_config fields.
func edsCluster(name, service, edsFields string) map[string]any {
	GinkgoHelper()
	return map[string]any{
		"name":            name,
		"type":            "EDS",
		"connect_timeout": "1s",
		"eds_cluster_config": map[string]any{
			"service_name": service,
			"eds_config":   merge(map[string]any{"ads": map[string]any{}, "resource_api_version": "V3"}, edsFields),
		},
	}
}

// adsSnapshot is a snapshot of version holding listeners and load
// assignments.
func adsSnapshot(version string, ls []*listenerv3.Listener, clas ...*endpointv3.ClusterLoadAssignment) *cachev3.Snapshot {
	GinkgoHelper()
	return xdsSnapshot(version, ls, nil, clas...)
}

// xdsSnapshot is a snapshot of version holding listeners, clusters (the
// cluster type is there only when cs is not nil) and load assignments.
func xdsSnapshot(version string, ls []*listenerv3.Listener, cs []*clusterv3.Cluster, clas ...*endpointv3.ClusterLoadAssignment) *cachev3.Snapshot {
	GinkgoHelper()
	return routesSnapshot(version, ls, cs, nil, clas...)
}

// routesSnapshot is xdsSnapshot with route configurations too.
func routesSnapshot(version string, ls []*listenerv3.Listener, cs []*clusterv3.Cluster, rcs []*routev3.RouteConfiguration, clas ...*endpointv3.ClusterLoadAssignment) *cachev3.Snapshot {
	GinkgoHelper()
	// The listener type is always there: a snapshot without it would
	// answer the wildcard listener subscription with version "".
	res := map[resourcev3.Type][]cachetypes.Resource{resourcev3.ListenerType: {}}
	for _, rc := range rcs {
		res[resourcev3.RouteType] = append(res[resourcev3.RouteType], rc)
	}
	if cs != nil {
		res[resourcev3.ClusterType] = []cachetypes.Resource{}
	}
	for _, c := range cs {
		res[resourcev3.ClusterType] = append(res[resourcev3.ClusterType], c)
	}
	for _, l := range ls {
		res[resourcev3.ListenerType] = append(res[resourcev3.ListenerType], l)
	}
	for _, cla := range clas {
		res[resourcev3.EndpointType] = append(res[resourcev3.EndpointType], cla)
	}
	snap, err := cachev3.NewSnapshot(version, res)
	Expect(err).NotTo(HaveOccurred())
	return snap
}

// edsEndpoint is one endpoint of a load assignment: a loopback port, its
// priority and health.
type edsEndpoint struct {
	port     int
	priority uint32
	health   corev3.HealthStatus
	weight   uint32 // load_balancing_weight, unset when 0
}

// loadAssignment is the load assignment of service, one locality per
// endpoint.
func loadAssignment(service string, eps ...edsEndpoint) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: service}
	for _, ep := range eps {
		cla.Endpoints = append(cla.Endpoints, &endpointv3.LocalityLbEndpoints{
			Priority: ep.priority,
			LbEndpoints: []*endpointv3.LbEndpoint{{
				HealthStatus:        ep.health,
				LoadBalancingWeight: weight(ep.weight),
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(ep.port)},
					}}},
				}},
			}},
		})
	}
	return cla
}

// weight is a load_balancing_weight, nil for 0.
func weight(w uint32) *wrapperspb.UInt32Value {
	if w == 0 {
		return nil
	}
	return wrapperspb.UInt32(w)
}

// startNamed starts an HTTP server on loopback answering name, until the
// spec ends, and returns its port.
func startNamed(name string) int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	serveName(ln, name)
	return ln.Addr().(*net.TCPAddr).Port
}

// routeToCluster is a filter chain (YAML flow) whose connection manager,
// with stat prefix prefix, routes every request to cluster.
func routeToCluster(prefix, cluster string) string {
	return `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: ` + prefix + `, ` +
		`route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: ` + cluster + `}}]}]}, ` +
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

// steadyLoad sends GETs to addr from two clients on keep-alive connections
// (at most 4000 requests or 60 s in all) until finish is called; finish
// returns how many were sent and the failures: errors, and answers other
// than 200 with body "A" or "B" (the two upstreams of the update specs).
func steadyLoad(addr string) (finish func() (int, []string)) {
	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		total    int
	)
	for range 2 {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			deadline := time.Now().Add(60 * time.Second)
			for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get("http://" + addr + "/")
				var body string
				if err == nil {
					bs, _ := io.ReadAll(resp.Body)
					_ = resp.Body.Close()
					body = string(bs)
				}
				mu.Lock()
				total++
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case resp.StatusCode != 200 || (body != "A" && body != "B"):
					failures = append(failures, strconv.Itoa(resp.StatusCode)+" "+body)
				}
				mu.Unlock()
			}
		})
	}
	return func() (int, []string) {
		close(stop)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return total, failures
	}
}
