package server

import (
	"context"
	"errors"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// adsClient is the ADS stream of dynamic_resources.ads_config with its
// gRPC channel, closed together.
type adsClient struct {
	*xds.ADS
	ch *grpcservice.Channel
}

// Close ends the stream, then closes the channel.
func (a *adsClient) Close() error {
	err := a.ADS.Close()
	return errors.Join(err, a.ch.Close())
}

// newADS prepares the ADS stream of dynamic_resources.ads_config, or
// returns nil without one. Its gRPC service names a static cluster; the
// stream opens when Run starts it, with whatever subscribed meanwhile
// (with nothing subscribed it stays open and idle, as Envoy's).
func (s *Server) newADS(dr *bootstrapv3.Bootstrap_DynamicResources) (*adsClient, error) {
	ads := dr.GetAdsConfig()
	if ads == nil {
		return nil, nil
	}
	const field = "dynamic_resources.ads_config.grpc_services[0]"
	ch, err := s.openGRPC(ads.GetGrpcServices()[0])
	if err != nil {
		return nil, &bootstrap.FieldError{Path: field, Reason: err.Error()}
	}
	client, err := xds.NewADS(xds.ADSOptions{
		Conn:                   ch.Conn(),
		CallContext:            func(ctx context.Context) (context.Context, context.CancelFunc) { return ch.CallContext(ctx, true) },
		Node:                   s.node(),
		NodeOnFirstMessageOnly: ads.GetSetNodeOnFirstMessageOnly(),
		Delta:                  ads.GetApiType() == corev3.ApiConfigSource_DELTA_GRPC,
		Stats:                  s.stats,
		Log:                    s.logs.Logger("config"),
		Unknown:                s.unknownDynamicPolicy(),
		UnknownCounter:         s.stats.Counter("server.dynamic_unknown_fields"),
		Now:                    s.now,
	})
	if err != nil {
		_ = ch.Close()
		return nil, &bootstrap.FieldError{Path: "dynamic_resources.ads_config", Reason: err.Error()}
	}
	return &adsClient{ADS: client, ch: ch}, nil
}
