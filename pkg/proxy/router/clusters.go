package router

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// ValidateClusters checks, as Envoy's validate_clusters does, that every
// cluster a route of rc names exists: the cluster of a route action, and
// each of its weighted_clusters. exists answers for a cluster name; the
// caller knows the clusters (the router knows none). defaultOn is what an
// unset validate_clusters means: true for a route configuration given
// inline in the connection manager, false for one from RDS. With
// validate_clusters false nothing is checked, and a route to a missing
// cluster answers at request time (503 NC cluster_not_found, or its
// cluster_not_found_response_code).
//
// It returns one error per unknown cluster, in configuration order, each
// naming the field below the route configuration:
// "virtual_hosts[0].routes[2].route.cluster: unknown cluster 'x'".
func ValidateClusters(rc *routev3.RouteConfiguration, defaultOn bool, exists func(name string) bool) []error {
	on := defaultOn
	if v := rc.GetValidateClusters(); v != nil {
		on = v.GetValue()
	}
	if !on {
		return nil
	}
	var errs []error
	errs = appendUnknownShadows(errs, "request_mirror_policies", rc.GetRequestMirrorPolicies(), exists)
	for i, vh := range rc.GetVirtualHosts() {
		errs = appendUnknownShadows(errs, fmt.Sprintf("virtual_hosts[%d].request_mirror_policies", i), vh.GetRequestMirrorPolicies(), exists)
		for j, r := range vh.GetRoutes() {
			a := r.GetRoute()
			if a == nil {
				continue
			}
			path := fmt.Sprintf("virtual_hosts[%d].routes[%d].route", i, j)
			errs = appendUnknownShadows(errs, path+".request_mirror_policies", a.GetRequestMirrorPolicies(), exists)
			switch c := a.GetClusterSpecifier().(type) {
			case *routev3.RouteAction_Cluster:
				if c.Cluster != "" && !exists(c.Cluster) {
					errs = append(errs, fmt.Errorf("%s.cluster: unknown cluster '%s'", path, c.Cluster))
				}
			case *routev3.RouteAction_WeightedClusters:
				for k, wc := range c.WeightedClusters.GetClusters() {
					if name := wc.GetName(); name != "" && !exists(name) {
						errs = append(errs, fmt.Errorf("%s.weighted_clusters.clusters[%d].name: unknown weighted cluster '%s'", path, k, name))
					}
				}
			}
		}
	}
	return errs
}

// appendUnknownShadows adds an error for each mirror policy of the list at
// path whose (static) cluster is unknown, in Envoy's words; a cluster
// named by a request header is known only per request.
func appendUnknownShadows(errs []error, path string, ps []*routev3.RouteAction_RequestMirrorPolicy, exists func(string) bool) []error {
	for k, p := range ps {
		if name := p.GetCluster(); name != "" && !exists(name) {
			errs = append(errs, fmt.Errorf("%s[%d].cluster: unknown shadow cluster '%s'", path, k, name))
		}
	}
	return errs
}
