package httpconn

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// routeMetadata is the matched route's metadata, which the access log's
// %METADATA(ROUTE:...)% reads. Route.metadata is not supported yet, so
// routes have none and the formatter refuses the ROUTE type; once
// router.Route carries the field, this returns it and the formatter
// accepts ROUTE.
func routeMetadata(*router.Route) *corev3.Metadata { return nil }
