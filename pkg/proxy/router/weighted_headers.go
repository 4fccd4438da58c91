package router

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// compileWeightedHeaders reads a weighted cluster's own header edits and
// host rewrite into wc. Errors name the field below the cluster weight.
func compileWeightedHeaders(c *routev3.WeightedCluster_ClusterWeight, wc *WeightedCluster) error {
	req, err := compileHeaderOps(c.GetRequestHeadersToAdd(), c.GetRequestHeadersToRemove(), "request_headers_to_add", "request_headers_to_remove")
	if err != nil {
		return err
	}
	resp, err := compileHeaderOps(c.GetResponseHeadersToAdd(), c.GetResponseHeadersToRemove(), "response_headers_to_add", "response_headers_to_remove")
	if err != nil {
		return err
	}
	// The proto's constraint checked the value (a header value).
	wc.hostRewrite = c.GetHostRewriteLiteral()
	wc.requestOps, wc.responseOps = req, resp
	return nil
}

// weighted is the route's weighted cluster of index wc (PickCluster's),
// nil for none.
func (r *Route) weighted(wc int) *WeightedCluster {
	if r.WeightedClusters == nil || wc < 0 || wc >= len(r.WeightedClusters.Clusters) {
		return nil
	}
	return &r.WeightedClusters.Clusters[wc]
}

// MutateWeightedRequest applies the request header edits of the route's
// weighted cluster wc (the index PickCluster chose; -1 for none) and
// returns its host_rewrite_literal ("" for none). Envoy applies them first,
// before the route's own edits and host rewrite, which may override them
// (WeightedClusterEntry::finalizeRequestHeaders).
func (r *Route) MutateWeightedRequest(wc int, h HeaderEditor, e *accesslog.Entry) string {
	w := r.weighted(wc)
	if w == nil {
		return ""
	}
	if w.requestOps != nil {
		w.requestOps.apply(h, e)
	}
	return w.hostRewrite
}

// MutateWeightedResponse applies the response header edits of the
// route's weighted cluster wc, before the route's own, as Envoy does.
func (r *Route) MutateWeightedResponse(wc int, h HeaderEditor, e *accesslog.Entry) {
	if w := r.weighted(wc); w != nil && w.responseOps != nil {
		w.responseOps.apply(h, e)
	}
}

// WeightedClusterHeader is the cluster_header of the route's weighted
// cluster wc, "" when it has a name (or the route no weighted clusters).
func (r *Route) WeightedClusterHeader(wc int) string {
	if w := r.weighted(wc); w != nil {
		return w.ClusterHeader
	}
	return ""
}
