package httpconn

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// noteImmediateHealthCheckFail hands the upstream's
// x-envoy-immediate-health-check-fail to the health checker of cl, as
// Envoy's router does. It is called only for a cluster with active health
// checks (cl.HealthChecked): without, the response's fields are not even
// looked at.
func (s *stream) noteImmediateHealthCheckFail(cl UpstreamCluster, h *upstream.Host) {
	if s.respHeaders.Has("x-envoy-immediate-health-check-fail") {
		cl.ImmediateHealthCheckFail(h)
	}
}
