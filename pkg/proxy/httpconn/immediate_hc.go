package httpconn

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// immediateHCFailer is what a cluster with active health checks offers:
// an upstream answer with x-envoy-immediate-health-check-fail fails the
// host at once, as a passive health check failure.
type immediateHCFailer interface {
	ImmediateHealthCheckFail(h *upstream.Host)
}

// noteImmediateHealthCheckFail hands the upstream's
// x-envoy-immediate-health-check-fail to the cluster's health checker, as
// Envoy's router does; clusters without one ignore it.
func (s *stream) noteImmediateHealthCheckFail(cl UpstreamCluster, h *upstream.Host) {
	if !s.respHeaders.Has("x-envoy-immediate-health-check-fail") {
		return
	}
	if f, ok := cl.(immediateHCFailer); ok {
		f.ImmediateHealthCheckFail(h)
	}
}
