//lint:file-ignore SA1019 Envoy still reads the deprecated DNS fields of a cluster

package cluster

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster/dnscluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// dnsSettings are a STRICT_DNS or LOGICAL_DNS cluster's resolution.
type dnsSettings struct {
	cfg dnscluster.Config
	// resolver is the cluster's own resolver; nil uses the server's.
	resolver dns.Spec
}

// buildDNS checks a DNS cluster's endpoints (host names allowed, as
// Envoy allows them: socket_address.address of each endpoint) and its DNS
// settings. Errors are relative to the cluster.
func buildDNS(c *clusterv3.Cluster, name string, reg *extension.Registry) (*dnsSettings, []error) {
	cfg, errs := dnscluster.FromCluster(c)
	la := c.GetLoadAssignment()
	if cfg.Logical {
		// Envoy's own checks and wording.
		switch {
		case la == nil:
			errs = append(errs, configErrorf("load_assignment", "LOGICAL_DNS clusters must have a single host"))
		case len(la.GetEndpoints()) != 1 || len(la.GetEndpoints()[0].GetLbEndpoints()) != 1:
			errs = append(errs, configErrorf("load_assignment", "LOGICAL_DNS clusters must have a single locality_lb_endpoint and a single lb_endpoint"))
		}
	}
	eps, eerrs := buildEndpoints(name, la, true, nil)
	for _, err := range eerrs {
		errs = append(errs, prefixed("load_assignment", err))
	}
	for _, ep := range eps {
		h := ep.host
		if h.Hostname == "" {
			// As in Envoy: a resolved host's hostname is the name resolved.
			h.Hostname = ep.name
		}
		if cfg.Logical {
			// Envoy moves a LOGICAL_DNS cluster's one endpoint to
			// priority 0.
			h.Priority = 0
		}
		cfg.Targets = append(cfg.Targets, dnscluster.Target{Name: ep.name, Port: ep.port, Host: h})
	}
	spec, serrs := dns.ForCluster(c, reg)
	for _, err := range serrs {
		errs = append(errs, prefixed("", err))
	}
	return &dnsSettings{cfg: cfg, resolver: spec}, errs
}

// ignoredDNSFields lists the DNS settings of a cluster whose type does not
// resolve names: Envoy accepts and ignores them, and so does Outrigger,
// with a warning each.
func ignoredDNSFields(c *clusterv3.Cluster) []string {
	var notes []string
	for _, field := range dnsFieldsSet(c, true) {
		notes = append(notes, fmt.Sprintf("%s has no effect on a %s cluster (Envoy ignores it too)", field, c.GetType()))
	}
	return notes
}

// dnsFieldsSet names the DNS settings of c that are set, sorted;
// wait_for_warm_on_init among them with withWarm.
func dnsFieldsSet(c *clusterv3.Cluster, withWarm bool) []string {
	// In name order, and on the stack: every cluster passes here, and a
	// map sorted per cluster cost ten allocations of each of a CDS
	// update's clusters.
	fields := [...]struct {
		name string
		set  bool
	}{
		{"dns_failure_refresh_rate", c.GetDnsFailureRefreshRate() != nil},
		{"dns_jitter", c.GetDnsJitter() != nil},
		{"dns_lookup_family", c.GetDnsLookupFamily() != clusterv3.Cluster_AUTO},
		{"dns_refresh_rate", c.GetDnsRefreshRate() != nil},
		{"dns_resolution_config", c.GetDnsResolutionConfig() != nil},
		{"dns_resolvers", len(c.GetDnsResolvers()) > 0},
		{"respect_dns_ttl", c.GetRespectDnsTtl()},
		{"typed_dns_resolver_config", c.GetTypedDnsResolverConfig() != nil},
		{"use_tcp_for_dns_lookups", c.GetUseTcpForDnsLookups()},
		{"wait_for_warm_on_init", withWarm && c.GetWaitForWarmOnInit() != nil},
	}
	var out []string
	for _, f := range fields {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}
