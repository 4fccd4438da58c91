package xds

import (
	"context"
	"path"

	"google.golang.org/grpc"
)

// The Aggregated Discovery Service's methods.
const (
	adsSotwMethod  = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	adsDeltaMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

// serviceMethods are the methods of each resource type's own discovery
// service, what a config source's api_config_source talks to (Envoy's
// type_to_endpoint): the gRPC streams of the state of the world and the
// incremental protocol, and the REST path polled (the Fetch method's
// google.api.http POST).
var serviceMethods = map[string]struct{ sotw, delta, rest string }{
	ListenerTypeURL: {
		"/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners",
		"/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners",
		"/v3/discovery:listeners",
	},
	"type.googleapis.com/envoy.config.cluster.v3.Cluster": {
		"/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters",
		"/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters",
		"/v3/discovery:clusters",
	},
	"type.googleapis.com/envoy.config.route.v3.RouteConfiguration": {
		"/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes",
		"/envoy.service.route.v3.RouteDiscoveryService/DeltaRoutes",
		"/v3/discovery:routes",
	},
	"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": {
		"/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints",
		"/envoy.service.endpoint.v3.EndpointDiscoveryService/DeltaEndpoints",
		"/v3/discovery:endpoints",
	},
	"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret": {
		"/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets",
		"/envoy.service.secret.v3.SecretDiscoveryService/DeltaSecrets",
		"/v3/discovery:secrets",
	},
	"type.googleapis.com/envoy.service.runtime.v3.Runtime": {
		"/envoy.service.runtime.v3.RuntimeDiscoveryService/StreamRuntime",
		"/envoy.service.runtime.v3.RuntimeDiscoveryService/DeltaRuntime",
		"/v3/discovery:runtime",
	},
}

// openStream opens a bidirectional stream of method on conn, as the
// generated clients do, with the response size bound.
func openStream[Req, Resp any](ctx context.Context, conn grpc.ClientConnInterface, method string) (grpc.BidiStreamingClient[Req, Resp], error) {
	desc := &grpc.StreamDesc{StreamName: path.Base(method), ServerStreams: true, ClientStreams: true}
	cs, err := conn.NewStream(ctx, desc, method, grpc.MaxCallRecvMsgSize(maxResponseBytes))
	if err != nil {
		return nil, err
	}
	return &grpc.GenericClientStream[Req, Resp]{ClientStream: cs}, nil
}
