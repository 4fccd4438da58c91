package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedAggregate lists the fields of the aggregate cluster
// (pkg/proxy/cluster's aggregate.go): a cluster_type naming
// envoy.clusters.aggregate with its ClusterConfig. The cluster builder
// refuses any other cluster type by name. The cluster_type fields
// themselves are in supportedDFP, shared by every custom cluster type.
var supportedAggregate = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.clusters.aggregate.v3.ClusterConfig.clusters": {},
}
