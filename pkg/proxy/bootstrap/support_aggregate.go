package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedAggregate lists the fields of the aggregate cluster
// (pkg/proxy/cluster's aggregate.go): a cluster_type naming
// envoy.clusters.aggregate with its ClusterConfig. The cluster builder
// refuses any other cluster type by name.
var supportedAggregate = map[protoreflect.FullName]fieldSupport{
	"envoy.config.cluster.v3.Cluster.cluster_type":                   {},
	"envoy.config.cluster.v3.Cluster.CustomClusterType.name":         {},
	"envoy.config.cluster.v3.Cluster.CustomClusterType.typed_config": {category: "envoy.clusters"},
	"envoy.extensions.clusters.aggregate.v3.ClusterConfig.clusters":  {},
}
