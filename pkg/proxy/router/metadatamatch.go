package router

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// compileMetadataMatch compiles a route action's metadata_match, and its
// weighted clusters', into the criteria that choose a load-balancer
// subset. Only the "envoy.lb" entry counts, as in Envoy; a weighted
// cluster's criteria are merged over the route's, replacing the values of
// the names they share.
func compileMetadataMatch(r *Route, a *routev3.RouteAction) {
	if fields, ok := lbFields(a.GetMetadataMatch()); ok {
		r.MetadataMatch = upstream.NewMetadataMatch(fields)
	}
	if r.WeightedClusters == nil {
		return
	}
	for i, c := range a.GetWeightedClusters().GetClusters() {
		wc := &r.WeightedClusters.Clusters[i]
		wc.MetadataMatch = r.MetadataMatch
		if fields, ok := lbFields(c.GetMetadataMatch()); ok {
			wc.MetadataMatch = r.MetadataMatch.Merge(fields)
		}
	}
}

// lbFields returns the fields of a metadata's "envoy.lb" entry, and
// whether it has one.
func lbFields(md *corev3.Metadata) (map[string]*structpb.Value, bool) {
	s, ok := md.GetFilterMetadata()[upstream.LBMetadataKey]
	if !ok {
		return nil, false
	}
	return s.GetFields(), true
}

// MetadataMatchFor returns the metadata_match criteria of a request that
// the route sends to its weighted cluster wc (-1 for none, as PickCluster
// returns it): the weighted cluster's, merged over the route's; nil when
// there are none.
func (r *Route) MetadataMatchFor(wc int) *upstream.MetadataMatch {
	if r == nil {
		return nil
	}
	if wc >= 0 && r.WeightedClusters != nil && wc < len(r.WeightedClusters.Clusters) {
		return r.WeightedClusters.Clusters[wc].MetadataMatch
	}
	return r.MetadataMatch
}
