package server

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// tracingContext is what the server gives tracers: gRPC channels and HTTP
// connections to its clusters, the node, stats, the runtime and the
// tracing logger.
func (s *Server) tracingContext() tracing.Context {
	return tracing.Context{
		Stats:    s.stats,
		Log:      s.logs.Logger("tracing"),
		OpenGRPC: s.openGRPC,
		Cluster: func(name string) grpcservice.Cluster {
			if s.clusters == nil {
				return nil
			}
			if c := s.clusters.Cluster(name); c != nil {
				return c
			}
			return nil
		},
		Node:    s.boot.GetNode(),
		Runtime: runtimeValues{s.runtime},
	}
}
