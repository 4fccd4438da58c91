package server

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// warnDeprecated warns once for each deprecated field or enum value the
// configuration uses, in Envoy's words, and counts them in
// runtime.deprecated_feature_use and
// runtime.deprecated_feature_seen_since_process_start, which exist at zero
// otherwise.
func (s *Server) warnDeprecated(fields []bootstrap.DeprecatedField) {
	rt := s.stats.Scope("runtime.")
	use := rt.Counter("deprecated_feature_use")
	seen := rt.Gauge("deprecated_feature_seen_since_process_start")
	for _, f := range fields {
		logging.Warning(s.log, fmt.Sprintf("Using deprecated option '%s' from file %s. This configuration will be removed "+
			"in a future version; see docs/compat.md for the v3 fields Outrigger reads.", f.Name, f.File), "field", f.Path)
		use.Inc()
		seen.Add(1)
	}
}

// warnDeprecatedResources warns about and counts the deprecated fields and
// enum values in the resources of a discovery update (from a stream, a
// REST poll or a file), as Envoy's check of each decoded resource does:
// on every update that brings the resource, before it is applied.
func (s *Server) warnDeprecatedResources(u xds.Update) {
	for i, r := range u.Resources {
		s.warnDeprecatedResource(i, r)
	}
}

// warnDeprecatedResource warns about and counts the deprecated fields and
// enum values of resource i of an update.
func (s *Server) warnDeprecatedResource(i int, r proto.Message) {
	if fields := s.deprecated.Scan(r, "resources["+strconv.Itoa(i)+"]"); len(fields) > 0 {
		s.warnDeprecated(fields)
	}
}
