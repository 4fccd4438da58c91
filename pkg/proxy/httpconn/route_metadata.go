package httpconn

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// routeMetadata is the matched route's metadata (Route.metadata), which
// %METADATA(ROUTE:...)% and route metadata tags read; nil without a route.
func routeMetadata(r *router.Route) *corev3.Metadata {
	if r == nil {
		return nil
	}
	return r.Metadata
}
