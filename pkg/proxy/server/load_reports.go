package server

import (
	"context"
	"errors"
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/loadreport"
)

// loadReporter is the load reporter of cluster_manager.load_stats_config
// with its gRPC channel, closed together.
type loadReporter struct {
	*loadreport.Reporter
	ch *grpcservice.Channel
}

// Close ends the stream, then closes the channel.
func (l *loadReporter) Close() error {
	if l == nil {
		return nil
	}
	return errors.Join(l.Reporter.Close(), l.ch.Close())
}

// newLoadReporter prepares the load reporter of
// cluster_manager.load_stats_config, or returns nil without one. Its gRPC
// service names a static cluster (checked at load); the stream opens
// when Run starts it, once the clusters are started.
func (s *Server) newLoadReporter(cm *bootstrapv3.ClusterManager) (*loadReporter, error) {
	api := cm.GetLoadStatsConfig()
	if api == nil || s.clusters == nil {
		return nil, nil
	}
	const path = "cluster_manager.load_stats_config."
	var problems []error
	for _, p := range bootstrap.LoadStatsConfigProblems(api) {
		problems = append(problems, p)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fieldpath.Prefix(path, err)
	}
	ch, err := s.openGRPC(api.GetGrpcServices()[0])
	if err != nil {
		return nil, fieldpath.Prefix(path+"grpc_services[0].", err)
	}
	rt := s.runtime
	r, err := loadreport.New(loadreport.Options{
		Conn:        ch.Conn(),
		CallContext: func(ctx context.Context) (context.Context, context.CancelFunc) { return ch.CallContext(ctx, true) },
		Node:        s.node(),
		Clusters:    s.clusters,
		Stats:       s.stats,
		Log:         s.logs.Logger("upstream"),
		Flag: func(key string, def bool) bool {
			if rt == nil {
				return def
			}
			return rt.Snapshot().Bool(key, def)
		},
		Now: s.now,
	})
	if err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("cluster_manager.load_stats_config: %w", err)
	}
	return &loadReporter{Reporter: r, ch: ch}, nil
}
