package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedSocketMatches lists transport_socket_matches (a transport
// socket per host, chosen by the host's endpoint metadata, else its
// locality's, under envoy.transport_socket_match; see
// pkg/proxy/cluster/socketmatch.go), the health checks' socket chosen by
// transport_socket_match_criteria, and the locality metadata they match.
// Their transport sockets are those of a cluster's transport_socket;
// the cluster refuses a tap or upstream PROXY protocol socket with
// matches. transport_socket_matcher (the xDS matcher variant) stays
// refused.
var supportedSocketMatches = map[protoreflect.FullName]fieldSupport{
	"envoy.config.cluster.v3.Cluster.transport_socket_matches":              {},
	"envoy.config.cluster.v3.Cluster.TransportSocketMatch.name":             {},
	"envoy.config.cluster.v3.Cluster.TransportSocketMatch.match":            {},
	"envoy.config.cluster.v3.Cluster.TransportSocketMatch.transport_socket": {},
	"envoy.config.core.v3.HealthCheck.transport_socket_match_criteria":      {},
	"envoy.config.endpoint.v3.LocalityLbEndpoints.metadata":                 {},
}
