package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// discoveryStreams are the streams that config sources with an
// api_config_source open, each its own, as Envoy's non-aggregated gRPC
// subscriptions do (a GrpcMux per subscription, on the resource type's
// own discovery service). They start with the server, or at once when
// made while it runs, and close at shutdown.
type discoveryStreams struct {
	mu      sync.Mutex
	started bool
	closed  bool
	list    []*adsClient
}

// add keeps c, starting it if the streams are started already; a stream
// added after close is closed at once.
func (d *discoveryStreams) add(c *adsClient) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = c.Close()
		return errors.New("the server is shutting down")
	}
	d.list = append(d.list, c)
	if d.started {
		return c.Start()
	}
	return nil
}

// start starts the streams made so far, and those made later at once.
func (d *discoveryStreams) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started = true
	var errs []error
	for _, c := range d.list {
		errs = append(errs, c.Start())
	}
	return errors.Join(errs...)
}

// remove ends a stream nothing uses any more.
func (d *discoveryStreams) remove(c *adsClient) {
	d.mu.Lock()
	d.list = slices.DeleteFunc(d.list, func(o *adsClient) bool { return o == c })
	d.mu.Unlock()
	_ = c.Close()
}

// close ends every stream.
func (d *discoveryStreams) close() {
	d.mu.Lock()
	d.closed = true
	list := d.list
	d.list = nil
	d.mu.Unlock()
	for _, c := range list {
		_ = c.Close()
	}
}

// streamFor is the stream a config source names for resources of
// typeURL: the ADS stream for ads: {}, or a new stream of its own to the
// service of an api_config_source. Errors name the field below the
// config source.
func (s *Server) streamFor(cs *corev3.ConfigSource, typeURL string) (*xds.ADS, error) {
	switch {
	case cs.GetAds() != nil:
		if s.ads == nil {
			return nil, errors.New("ads: requires dynamic_resources.ads_config (the ADS stream it names)")
		}
		return s.ads.ADS, nil
	case cs.GetApiConfigSource() != nil:
		c, err := s.newGRPCStream(cs.GetApiConfigSource(), typeURL)
		if err != nil {
			return nil, fieldpath.Prefix("api_config_source.", err)
		}
		if err := s.streams.add(c); err != nil {
			return nil, fmt.Errorf("api_config_source: %w", err)
		}
		return c.ADS, nil
	}
	return nil, errors.New("ads or api_config_source is required")
}

// checkAPIConfigSource checks an api_config_source as Envoy does for a
// gRPC stream: GRPC or DELTA_GRPC, the V3 transport, exactly one gRPC
// service, an envoy_grpc one. Errors name the field below it.
func checkAPIConfigSource(api *corev3.ApiConfigSource) error {
	var errs []error
	switch api.GetApiType() {
	case corev3.ApiConfigSource_GRPC, corev3.ApiConfigSource_DELTA_GRPC:
	default:
		errs = append(errs, fmt.Errorf("api_type: %s is not supported by Outrigger (GRPC or DELTA_GRPC)", api.GetApiType()))
	}
	if api.GetTransportApiVersion() != corev3.ApiVersion_V3 {
		errs = append(errs, errors.New("transport_api_version: must be V3 (Envoy refuses the AUTO and V2 transports)"))
	}
	switch n := len(api.GetGrpcServices()); {
	case n == 0:
		errs = append(errs, errors.New("grpc_services: one gRPC service is required"))
	case n > 1:
		errs = append(errs, errors.New("grpc_services: only singleton gRPC service lists supported"))
	case api.GetGrpcServices()[0].GetEnvoyGrpc() == nil:
		errs = append(errs, errors.New("grpc_services[0]: an envoy_grpc service naming a static cluster is required: google_grpc is not supported by Outrigger"))
	}
	return errors.Join(errs...)
}

// newGRPCStream prepares a gRPC discovery stream to api's service, for
// resources of typeURL (its own discovery service), or the ADS stream
// when typeURL is empty. Errors name the field below api.
func (s *Server) newGRPCStream(api *corev3.ApiConfigSource, typeURL string) (*adsClient, error) {
	if err := checkAPIConfigSource(api); err != nil {
		return nil, err
	}
	ch, err := s.openGRPC(api.GetGrpcServices()[0])
	if err != nil {
		return nil, fmt.Errorf("grpc_services[0]: %w", err)
	}
	var limit *xds.RateLimit
	if rl := api.GetRateLimitSettings(); rl != nil {
		limit = &xds.RateLimit{MaxTokens: rl.GetMaxTokens().GetValue(), FillRate: rl.GetFillRate().GetValue()}
	}
	client, err := xds.NewADS(xds.ADSOptions{
		Conn:                   ch.Conn(),
		CallContext:            func(ctx context.Context) (context.Context, context.CancelFunc) { return ch.CallContext(ctx, true) },
		Node:                   s.node(),
		NodeOnFirstMessageOnly: api.GetSetNodeOnFirstMessageOnly(),
		Delta:                  api.GetApiType() == corev3.ApiConfigSource_DELTA_GRPC,
		TypeURL:                typeURL,
		RateLimit:              limit,
		Stats:                  s.stats,
		Log:                    s.logs.Logger("config"),
		Unknown:                s.unknownDynamicPolicy(),
		UnknownCounter:         s.stats.Counter("server.dynamic_unknown_fields"),
		Now:                    s.now,
	})
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	return &adsClient{ADS: client, ch: ch}, nil
}
