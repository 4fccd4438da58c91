// Package ondemand is the on-demand HTTP filter
// (envoy.filters.http.on_demand) with on-demand cluster discovery: a
// request whose route names a cluster that is not there asks the
// management server for it (on-demand CDS over the delta ADS stream) and
// waits for it, up to odcds.timeout, before the router runs, as Envoy's
// filter does. A route's PerRouteConfig replaces the filter's settings.
// Without odcds the filter would only ask for virtual hosts (VHDS), which
// Outrigger does not have: it then lets every request through, as
// Envoy's does for a route configuration without VHDS.
package ondemand

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ondemandv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.on_demand"

// defaultTimeout is Envoy's odcds.timeout when unset.
const defaultTimeout = 5 * time.Second

// DiscoverFunc asks for the cluster name and waits, up to timeout, for it
// to be in service; it reports whether it is. ctx ends the wait early.
type DiscoverFunc = func(ctx context.Context, name string, timeout time.Duration) bool

// OnDemandSource is implemented by the httpfilter.Services of a server
// that discovers clusters on demand: its DiscoverFunc, nil when the
// server cannot (no delta ADS stream).
type OnDemandSource interface {
	OnDemandClusters() DiscoverFunc
}

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*ondemandv3.OnDemand)
	if !ok {
		return nil, errors.New("not an OnDemand configuration")
	}
	s, err := compile(c.GetOdcds(), ctx)
	if err != nil {
		return nil, err
	}
	return &filterConfig{name: ctx.Name, settings: s}, nil
}

// CompileRoute implements httpfilter.RouteFactory: PerRouteConfig.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*ondemandv3.PerRouteConfig)
	if !ok {
		return nil, errors.New("not a PerRouteConfig configuration")
	}
	return compile(c.GetOdcds(), ctx)
}

// settings are a compiled OnDemandCds; discover is nil without one (the
// filter then lets requests through).
type settings struct {
	discover DiscoverFunc
	timeout  time.Duration
	// services finds the clusters in service.
	services httpfilter.Services
}

// compile reads an OnDemandCds. Errors name the field path below the
// filter's configuration.
func compile(od *ondemandv3.OnDemandCds, ctx httpfilter.Context) (*settings, error) {
	if od == nil {
		return &settings{}, nil
	}
	var errs []error
	if od.GetResourcesLocator() != "" {
		errs = append(errs, errors.New("odcds.resources_locator: not supported by Outrigger (no xdstp:// resource locators)"))
	}
	src := od.GetSource()
	var discover DiscoverFunc
	switch {
	case src.GetAds() == nil:
		errs = append(errs, errors.New("odcds.source: ads: {} is required: Outrigger discovers clusters on demand over the ADS stream only"))
	default:
		if s, ok := ctx.Services.(OnDemandSource); ok {
			discover = s.OnDemandClusters()
		}
		if discover == nil {
			errs = append(errs, errors.New("odcds.source.ads: requires dynamic_resources.ads_config with api_type DELTA_GRPC (on-demand CDS is delta xDS only)"))
		}
	}
	if src.GetInitialFetchTimeout() != nil {
		errs = append(errs, errors.New("odcds.source.initial_fetch_timeout: not supported by Outrigger (odcds.timeout bounds the wait)"))
	}
	if v := src.GetResourceApiVersion(); v != corev3.ApiVersion_AUTO && v != corev3.ApiVersion_V3 {
		errs = append(errs, fmt.Errorf("odcds.source.resource_api_version: %s is not supported (V3 only)", v))
	}
	timeout := defaultTimeout
	if t := od.GetTimeout(); t != nil {
		timeout = t.AsDuration()
		if timeout <= 0 {
			errs = append(errs, errors.New("odcds.timeout: must be greater than 0s"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &settings{discover: discover, timeout: timeout, services: ctx.Services}, nil
}

// filterConfig is the compiled filter; it keeps no state per request, so
// it is its own filter.
type filterConfig struct {
	name     string
	settings *settings
}

var _ httpfilter.Decoder = (*filterConfig)(nil)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: a route to a cluster that
// is not there waits for its discovery; then the route is matched again
// and the request goes on (to the router's 503 cluster_not_found when the
// cluster did not come in time). A request without a route, a route
// without a cluster (a direct response, a redirect) or naming none (a
// missing cluster_header) goes on at once.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	st := c.settings
	if rc, ok := s.RouteConfig(c.name).(*settings); ok {
		st = rc
	}
	if st.discover == nil || s.Route() == nil {
		return httpfilter.Continue
	}
	name := s.ClusterName()
	if name == "" || st.services.Cluster(name) != nil {
		return httpfilter.Continue
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	found := false
	go func() {
		defer close(done)
		found = st.discover(ctx, name, st.timeout)
	}()
	if !s.Wait(done) {
		return httpfilter.Stop // the stream answered (a timeout) or the client went away
	}
	if found {
		// Matched again, as Envoy's filter recreates the stream.
		s.ClearRouteCache()
	}
	return httpfilter.Continue
}
