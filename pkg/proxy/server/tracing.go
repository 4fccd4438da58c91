package server

import (
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
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
		Cluster:  s.grpcCluster,
		Node:     s.boot.GetNode(),
		Runtime:  runtimeValues{s.runtime},
		Version:  options.BuildVersion(),
	}
}

// defaultTracer is the bootstrap's tracing.http: the tracer of connection
// managers whose tracing names no provider.
func (s *Server) defaultTracer() *tracev3.Tracing_Http {
	//lint:ignore SA1019 the bootstrap's tracing is deprecated for tracing.provider, and still accepted (with Envoy's deprecation warning).
	return s.boot.GetTracing().GetHttp()
}
