package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedClusterPolicies lists the route policies a cluster's HTTP
// protocol options carry, which replace the route's for the requests
// routed to the cluster (pkg/proxy/router ClusterPolicies,
// pkg/proxy/httpconn cluster_policies.go). Their contents are the route's
// messages, listed with the routes.
var supportedClusterPolicies = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.retry_policy":            {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.hash_policy":             {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.request_mirror_policies": {},
}
