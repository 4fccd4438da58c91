package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
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
			return nil, s.noADS("ads")
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

// checkAPIConfigSource checks an api_config_source as the bootstrap
// does (see bootstrap.APIConfigSourceProblems): the server makes streams
// for discovered resources too. Errors name the field below it.
func checkAPIConfigSource(api *corev3.ApiConfigSource, rest bool) error {
	var errs []error
	for _, p := range bootstrap.APIConfigSourceProblems(api, rest) {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// newGRPCStream prepares the discovery client of api, for resources of
// typeURL (its own discovery service): a gRPC stream, or REST polling.
// With an empty typeURL it is the ADS stream, gRPC only. Errors name the
// field below api.
func (s *Server) newGRPCStream(api *corev3.ApiConfigSource, typeURL string) (*adsClient, error) {
	if err := checkAPIConfigSource(api, typeURL != ""); err != nil {
		return nil, err
	}
	opts := xds.ADSOptions{
		Node:           s.node(),
		TypeURL:        typeURL,
		Stats:          s.stats,
		Log:            s.logs.Logger("config"),
		Unknown:        s.unknownDynamicPolicy(),
		UnknownCounter: s.stats.Counter("server.dynamic_unknown_fields"),
		Now:            s.now,
		HostRoot:       s.hostRoot,
	}
	if api.GetApiType() == corev3.ApiConfigSource_REST {
		return s.newRESTClient(api, opts)
	}
	ch, err := s.openGRPC(api.GetGrpcServices()[0])
	if err != nil {
		return nil, fmt.Errorf("grpc_services[0]: %w", err)
	}
	var limit *xds.RateLimit
	if rl := api.GetRateLimitSettings(); rl != nil {
		limit = &xds.RateLimit{MaxTokens: rl.GetMaxTokens().GetValue(), FillRate: rl.GetFillRate().GetValue()}
	}
	opts.Conn = ch.Conn()
	opts.CallContext = func(ctx context.Context) (context.Context, context.CancelFunc) { return ch.CallContext(ctx, true) }
	opts.NodeOnFirstMessageOnly = api.GetSetNodeOnFirstMessageOnly()
	opts.Delta = api.GetApiType() == corev3.ApiConfigSource_DELTA_GRPC
	opts.RateLimit = limit
	if b, ok := ch.ReconnectBackoff(); ok {
		// envoy_grpc.retry_policy: the stream's reconnection back-off.
		opts.BackoffBase, opts.BackoffMax = b.Base, b.Max
	}
	client, err := xds.NewADS(opts)
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	return &adsClient{ADS: client, ch: ch}, nil
}

// newRESTClient prepares the REST polling of api (checked), whose
// requests go to the hosts of its cluster as Envoy's RestApiFetcher's do.
func (s *Server) newRESTClient(api *corev3.ApiConfigSource, opts xds.ADSOptions) (*adsClient, error) {
	name := api.GetClusterNames()[0]
	svc := filterServices{s: s}
	// As Envoy's: the cluster must be static, and not one whose hosts
	// come from discovery itself.
	var c *cluster.Cluster
	if s.clusters != nil {
		c = s.clusters.Cluster(name)
	}
	if !staticNonEDS(c) {
		return nil, fmt.Errorf("cluster_names[0]: must have a statically defined non-EDS cluster: '%s' does not exist, was added via api, or is an EDS cluster", name)
	}
	opts.REST = &xds.RESTOptions{
		Transport:      httpfilter.ClusterTransport(svc, name, 1),
		Host:           name,
		RefreshDelay:   api.GetRefreshDelay().AsDuration(),
		RequestTimeout: api.GetRequestTimeout().AsDuration(),
	}
	client, err := xds.NewADS(opts)
	if err != nil {
		return nil, err
	}
	return &adsClient{ADS: client}, nil
}

// staticNonEDS reports whether c is a cluster a REST config source can
// poll through: there, from the bootstrap, with hosts of its own.
func staticNonEDS(c *cluster.Cluster) bool {
	if c == nil || c.AddedViaAPI() {
		return false
	}
	_, eds := c.EDSServiceName()
	return !eds
}
