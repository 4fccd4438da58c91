package server

import (
	"errors"
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// adsClient is a discovery client (the ADS stream of
// dynamic_resources.ads_config, or a config source's own stream or REST
// polling) with its gRPC channel, closed together; REST has no channel.
type adsClient struct {
	*xds.ADS
	ch *grpcservice.Channel
}

// Close ends the stream, then closes the channel.
func (a *adsClient) Close() error {
	err := a.ADS.Close()
	if a.ch == nil {
		return err
	}
	return errors.Join(err, a.ch.Close())
}

// noADS is the error of a config source naming the ADS stream when there
// is none, at path (the source's ads field): either the bootstrap has no
// dynamic_resources.ads_config, or it has one that did not load, whose own
// error already says why.
func (s *Server) noADS(path string) error {
	if s.boot.GetDynamicResources().GetAdsConfig() != nil {
		return fmt.Errorf("%s: the ADS stream of dynamic_resources.ads_config did not start (see that field's error)", path)
	}
	return fmt.Errorf("%s: requires dynamic_resources.ads_config (the ADS stream it names)", path)
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
	c, err := s.newGRPCStream(ads, "")
	if err != nil {
		return nil, fieldpath.Prefix("dynamic_resources.ads_config.", err)
	}
	return c, nil
}
