//lint:file-ignore SA1019 Envoy still reads the deprecated DNS fields of a cluster

package cluster

import (
	"fmt"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dnscommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/common/dns/v3"
	dnsclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dns/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// dnsTypePath is where a DnsCluster sits in its cluster.
const dnsTypePath = "cluster_type.typed_config"

// dnsClusterType is a cluster whose cluster_type is Envoy's DNS cluster
// extension (envoy.clusters.dns, envoy.extensions.clusters.dns.v3.DnsCluster),
// the form newer Envoy documentation uses for STRICT_DNS and LOGICAL_DNS.
type dnsClusterType struct {
	// cluster is the STRICT_DNS or LOGICAL_DNS cluster the extension
	// stands for: the DnsCluster's settings in the cluster's DNS fields.
	cluster *clusterv3.Cluster
	// minRefresh is dns_min_refresh_rate, which a cluster has no field for.
	minRefresh time.Duration
	notes      []string
	errs       []error
}

// fromDNSClusterType converts a cluster of the DNS cluster extension into
// the legacy DNS cluster it stands for, so that one implementation serves
// both forms; ok is false for any other cluster_type. As in Envoy, the
// DnsCluster alone sets the resolution (all_addresses_in_single_endpoint
// chooses LOGICAL_DNS) and the cluster's own DNS fields have no effect:
// each one set is a warning. wait_for_warm_on_init stays the cluster's.
func fromDNSClusterType(c *clusterv3.Cluster, reg *extension.Registry) (dnsClusterType, bool) {
	ct := c.GetClusterType()
	if ct == nil {
		return dnsClusterType{}, false
	}
	// Errors of the lookup are buildClusterType's to report.
	_, msg, err := reg.Resolve(extension.Ref{Kind: "cluster type", Category: dnscache.ClusterTypeCategory, Name: ct.GetName(), Config: ct.GetTypedConfig()}, true)
	dc, ok := msg.(*dnsclusterv3.DnsCluster)
	if err != nil || !ok {
		return dnsClusterType{}, false
	}
	out := proto.Clone(c).(*clusterv3.Cluster)
	kind := clusterv3.Cluster_STRICT_DNS
	if dc.GetAllAddressesInSingleEndpoint() {
		kind = clusterv3.Cluster_LOGICAL_DNS
	}
	out.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: kind}
	var d dnsClusterType
	// wait_for_warm_on_init stays the cluster's.
	for _, field := range dnsFieldsSet(c, false) {
		d.notes = append(d.notes, fmt.Sprintf("%s has no effect on a cluster of type %s: the settings of %s apply (Envoy ignores it too)", field, ct.GetName(), dnsTypePath))
	}
	out.DnsRefreshRate = dc.GetDnsRefreshRate()
	out.DnsFailureRefreshRate = nil
	if f := dc.GetDnsFailureRefreshRate(); f != nil {
		out.DnsFailureRefreshRate = &clusterv3.Cluster_RefreshRate{BaseInterval: f.GetBaseInterval(), MaxInterval: f.GetMaxInterval()}
	}
	out.RespectDnsTtl = dc.GetRespectDnsTtl()
	out.DnsJitter = dc.GetDnsJitter()
	out.DnsLookupFamily = lookupFamily(dc.GetDnsLookupFamily())
	out.DnsResolvers = nil
	out.UseTcpForDnsLookups = false
	out.DnsResolutionConfig = nil
	out.TypedDnsResolverConfig = dc.GetTypedDnsResolverConfig()
	d.cluster = out
	if m := dc.GetDnsMinRefreshRate(); m != nil {
		if err := m.CheckValid(); err != nil || m.AsDuration() < time.Second {
			d.errs = append(d.errs, configErrorf(dnsTypePath+".dns_min_refresh_rate", "must be at least 1s"))
		} else {
			d.minRefresh = m.AsDuration()
		}
	}
	return d, true
}

// lookupFamily maps the extension's lookup family, whose enum starts with
// UNSPECIFIED (the default, AUTO), onto the cluster's.
func lookupFamily(f dnscommonv3.DnsLookupFamily) clusterv3.Cluster_DnsLookupFamily {
	switch f {
	case dnscommonv3.DnsLookupFamily_V4_ONLY:
		return clusterv3.Cluster_V4_ONLY
	case dnscommonv3.DnsLookupFamily_V6_ONLY:
		return clusterv3.Cluster_V6_ONLY
	case dnscommonv3.DnsLookupFamily_V4_PREFERRED:
		return clusterv3.Cluster_V4_PREFERRED
	case dnscommonv3.DnsLookupFamily_ALL:
		return clusterv3.Cluster_ALL
	default:
		return clusterv3.Cluster_AUTO
	}
}

// dnsTypeErrors moves the errors of the converted DNS fields under the
// DnsCluster they came from.
func dnsTypeErrors(errs []error) []error {
	fields := []string{"dns_refresh_rate", "dns_failure_refresh_rate", "respect_dns_ttl", "dns_jitter", "dns_lookup_family", "typed_dns_resolver_config"}
	for i, err := range errs {
		fe, ok := prefixed("", err).(*bootstrap.FieldError)
		if !ok {
			continue
		}
		for _, f := range fields {
			if fe.Path == f || strings.HasPrefix(fe.Path, f+".") || strings.HasPrefix(fe.Path, f+"[") {
				errs[i] = prefixed(dnsTypePath, fe)
				break
			}
		}
	}
	return errs
}
