package server

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// filterServices is how HTTP filters that call a service (ext_authz)
// reach the server's clusters (httpfilter.Services).
type filterServices struct{ s *Server }

// OpenGRPC implements httpfilter.Services.
func (f filterServices) OpenGRPC(gs *corev3.GrpcService) (*grpcservice.Channel, error) {
	return f.s.openGRPC(gs)
}

// Cluster implements httpfilter.Services.
func (f filterServices) Cluster(name string) grpcservice.Cluster {
	if f.s.clusters == nil {
		return nil
	}
	if c := f.s.clusters.Cluster(name); c != nil {
		return c
	}
	return nil
}
