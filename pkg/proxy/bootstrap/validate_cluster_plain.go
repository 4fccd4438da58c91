//lint:file-ignore SA1019 the shortcut must see every field of a cluster, deprecated ones too: a cluster that sets one takes the walk

package bootstrap

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// plainClusterFields are the fields a cluster of the plain shape may
// have, the shape of a control plane's many EDS clusters: a name (and
// alt_stat_name), a type, a connect_timeout, an lb_policy, and an
// eds_cluster_config with a service_name and an eds_config over ADS
// (ads, initial_fetch_timeout, resource_api_version). isPlainCluster
// accepts only these, and only while the support table accepts each of
// them everywhere without conditions other than a list of enum values
// (plainClusterEnums).
var plainClusterFields = []protoreflect.FullName{
	"envoy.config.cluster.v3.Cluster.name",
	"envoy.config.cluster.v3.Cluster.alt_stat_name",
	"envoy.config.cluster.v3.Cluster.eds_cluster_config",
	"envoy.config.cluster.v3.Cluster.connect_timeout",
	"envoy.config.cluster.v3.Cluster.EdsClusterConfig.eds_config",
	"envoy.config.cluster.v3.Cluster.EdsClusterConfig.service_name",
	"envoy.config.core.v3.ConfigSource.ads",
	"envoy.config.core.v3.ConfigSource.initial_fetch_timeout",
}

// plainClusterEnumFields are the enum fields of the plain shape, whose
// values the support table may restrict to a list.
var plainClusterEnumFields = []protoreflect.FullName{
	"envoy.config.cluster.v3.Cluster.type",
	"envoy.config.cluster.v3.Cluster.lb_policy",
	"envoy.config.core.v3.ConfigSource.resource_api_version",
}

// plainEnumValues are the values the support table accepts for each of
// plainClusterEnumFields; nil when one of them has another condition,
// which turns the shortcut off.
type plainEnumValues struct {
	types, lbPolicies, apiVersions map[protoreflect.EnumNumber]bool
}

// plainClusterEnums is plainClusterSupported's answer for the enum
// fields, found once: the tables never change after initialization.
var plainClusterEnums = plainClusterSupported()

// plainClusters says whether the shortcut is on: every field of the
// plain shape is accepted by the support table without conditions, and
// the enum fields' accepted values are known.
var plainClusters = plainEndpointsSupported(plainClusterFields) && plainClusterEnums != nil

// plainClusterSupported reads the support table's rules for the enum
// fields of the plain shape: the set of accepted values of each (every
// value when the rule has no list), or nil when a rule has any other
// condition (a path restriction, values accepted only in some places),
// or a field is missing from the table.
func plainClusterSupported() *plainEnumValues {
	sets := make([]map[protoreflect.EnumNumber]bool, len(plainClusterEnumFields))
	descs := []protoreflect.FieldDescriptor{
		(&clusterv3.Cluster{}).ProtoReflect().Descriptor().Fields().ByName("type"),
		(&clusterv3.Cluster{}).ProtoReflect().Descriptor().Fields().ByName("lb_policy"),
		(&corev3.ConfigSource{}).ProtoReflect().Descriptor().Fields().ByName("resource_api_version"),
	}
	for i, name := range plainClusterEnumFields {
		rule, ok := lookupSupport(name)
		fd := descs[i]
		if !ok || fd == nil || fd.FullName() != name || rule.only != nil || rule.category != "" || len(rule.types) > 0 ||
			rule.perFilter || rule.firstOfCategory != "" || len(rule.sinkValues) > 0 || len(rule.listenerValues) > 0 {
			return nil
		}
		set := map[protoreflect.EnumNumber]bool{}
		values := fd.Enum().Values()
		for j := range values.Len() {
			v := values.Get(j)
			set[v.Number()] = len(rule.values) == 0
		}
		for _, accepted := range rule.values {
			v := values.ByName(protoreflect.Name(accepted))
			if v == nil {
				return nil
			}
			set[v.Number()] = true
		}
		sets[i] = set
	}
	return &plainEnumValues{types: sets[0], lbPolicies: sets[1], apiVersions: sets[2]}
}

// isPlainCluster reports whether c is of the plain shape (only the fields
// of plainClusterFields and plainClusterEnumFields, each enum value one
// the support table accepts): then the support check of ValidateCluster,
// a reflective walk of some microseconds that a CDS response of
// thousands of clusters pays for each, finds nothing, and ValidateCluster
// skips it (the API's constraints are still checked, by ValidateAll).
// False says nothing: the walk runs. plain is plainClusters (the tests
// pass false to compare).
//
// The fields are read from the generated structs, so a field added to
// one of these messages by a newer API would be missed here:
// TestPlainClusterKnowsEveryField fails then, until this function reads
// it too.
func isPlainCluster(c *clusterv3.Cluster, plain bool) bool {
	if !plain || c == nil || plainClusterEnums == nil {
		return false
	}
	switch t := c.GetClusterDiscoveryType().(type) {
	case nil:
	case *clusterv3.Cluster_Type:
		if !plainClusterEnums.types[protoreflect.EnumNumber(t.Type)] {
			return false
		}
	default:
		return false
	}
	if p := c.GetLbPolicy(); p != 0 && !plainClusterEnums.lbPolicies[protoreflect.EnumNumber(p)] {
		return false
	}
	if eds := c.GetEdsClusterConfig(); eds != nil {
		if src := eds.GetEdsConfig(); src != nil {
			switch src.GetConfigSourceSpecifier().(type) {
			case nil, *corev3.ConfigSource_Ads:
			default:
				return false
			}
			if v := src.GetResourceApiVersion(); v != 0 && !plainClusterEnums.apiVersions[protoreflect.EnumNumber(v)] {
				return false
			}
			if len(src.GetAuthorities()) > 0 {
				return false
			}
		}
	}
	return len(c.GetTransportSocketMatches()) == 0 && c.GetTransportSocketMatcher() == nil &&
		c.GetStatsMatcher() == nil && c.GetPerConnectionBufferLimitBytes() == nil &&
		c.GetPerConnectionBufferHighWatermarkTimeout() == nil && c.GetLoadAssignment() == nil &&
		len(c.GetHealthChecks()) == 0 && c.GetMaxRequestsPerConnection() == nil && c.GetCircuitBreakers() == nil &&
		c.GetUpstreamHttpProtocolOptions() == nil && c.GetCommonHttpProtocolOptions() == nil &&
		c.GetHttpProtocolOptions() == nil && c.GetHttp2ProtocolOptions() == nil &&
		len(c.GetTypedExtensionProtocolOptions()) == 0 && c.GetDnsRefreshRate() == nil && c.GetDnsJitter() == nil &&
		c.GetDnsFailureRefreshRate() == nil && !c.GetRespectDnsTtl() && c.GetDnsLookupFamily() == 0 &&
		len(c.GetDnsResolvers()) == 0 && !c.GetUseTcpForDnsLookups() && c.GetDnsResolutionConfig() == nil &&
		c.GetTypedDnsResolverConfig() == nil && c.GetWaitForWarmOnInit() == nil && c.GetOutlierDetection() == nil &&
		c.GetCleanupInterval() == nil && c.GetUpstreamBindConfig() == nil && c.GetLbSubsetConfig() == nil &&
		c.GetLbConfig() == nil && c.GetCommonLbConfig() == nil && c.GetTransportSocket() == nil &&
		c.GetMetadata() == nil && c.GetProtocolSelection() == 0 && c.GetUpstreamConnectionOptions() == nil &&
		!c.GetCloseConnectionsOnHostHealthFailure() && !c.GetIgnoreHealthOnHostRemoval() &&
		len(c.GetFilters()) == 0 && c.GetLoadBalancingPolicy() == nil && c.GetLrsServer() == nil &&
		len(c.GetLrsReportEndpointMetrics()) == 0 && !c.GetTrackTimeoutBudgets() && c.GetUpstreamConfig() == nil &&
		c.GetTrackClusterStats() == nil && c.GetPreconnectPolicy() == nil &&
		!c.GetConnectionPoolPerDownstreamConnection() && c.GetQueuingPolicies() == nil
}
