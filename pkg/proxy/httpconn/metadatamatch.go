package httpconn

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// metadataMatch is the criteria that choose the request's load-balancer
// subset, as Envoy's router computes them once per request: the route's
// (its weighted cluster's merged over it), with the stream's dynamic
// metadata under "envoy.lb", which filters before the router may set
// (header_to_metadata, set_metadata, Lua...), merged over them: a name
// the metadata has takes its value from it.
func (s *stream) metadataMatch(route *router.Route) *upstream.MetadataMatch {
	criteria := route.MetadataMatchFor(s.wc)
	lb, ok := s.entry.DynamicMetadata.GetFilterMetadata()[upstream.LBMetadataKey]
	if !ok {
		return criteria
	}
	return criteria.Merge(lb.GetFields())
}
