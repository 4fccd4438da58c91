package tcpproxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// defaultOnDemandTimeout is Envoy's on_demand.timeout when unset.
const defaultOnDemandTimeout = 60 * time.Second

// onDemand is TcpProxy.on_demand: a connection to a cluster that is not
// there asks the management server for it (on-demand CDS over the delta
// ADS stream) and waits up to timeout, then proxies or closes, as Envoy's
// tcp_proxy.
type onDemand struct {
	clusters netfilter.OnDemandClusters
	timeout  time.Duration
	// Envoy's on-demand stats, in the proxy's tcp.<stat_prefix>. scope,
	// created only when on-demand discovery is on.
	attempt, missing, timedOut, success *stats.Counter
}

// compileOnDemand reads on_demand; nil when it is unset or has no
// odcds_config (Envoy's filter then does no discovery). Errors name the
// field path below typed_config.
func compileOnDemand(cfg *tcpproxyv3.TcpProxy, ctx netfilter.Context) (*onDemand, error) {
	od := cfg.GetOnDemand()
	if od.GetOdcdsConfig() == nil {
		if od.GetResourcesLocator() != "" {
			return nil, errors.New("on_demand.resources_locator: not supported by Outrigger (no xdstp:// resource locators)")
		}
		return nil, nil
	}
	var errs []error
	if od.GetResourcesLocator() != "" {
		errs = append(errs, errors.New("on_demand.resources_locator: not supported by Outrigger (no xdstp:// resource locators)"))
	}
	src := od.GetOdcdsConfig()
	switch {
	case src.GetAds() == nil:
		errs = append(errs, errors.New("on_demand.odcds_config: ads: {} is required: Outrigger discovers clusters on demand over the ADS stream only"))
	case ctx.OnDemand == nil:
		errs = append(errs, errors.New("on_demand.odcds_config.ads: requires dynamic_resources.ads_config with api_type DELTA_GRPC (on-demand CDS is delta xDS only)"))
	}
	if src.GetInitialFetchTimeout() != nil {
		errs = append(errs, errors.New("on_demand.odcds_config.initial_fetch_timeout: not supported by Outrigger (on_demand.timeout bounds the wait)"))
	}
	if v := src.GetResourceApiVersion(); v != corev3.ApiVersion_AUTO && v != corev3.ApiVersion_V3 {
		errs = append(errs, fmt.Errorf("on_demand.odcds_config.resource_api_version: %s is not supported (V3 only)", v))
	}
	timeout := defaultOnDemandTimeout
	if t := od.GetTimeout(); t != nil {
		timeout = t.AsDuration()
		if timeout <= 0 {
			errs = append(errs, errors.New("on_demand.timeout: must be greater than 0s"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sc := ctx.Stats.Scope("tcp." + cfg.GetStatPrefix() + ".")
	return &onDemand{
		clusters: ctx.OnDemand,
		timeout:  timeout,
		attempt:  sc.Counter("on_demand_cluster_attempt"),
		missing:  sc.Counter("on_demand_cluster_missing"),
		timedOut: sc.Counter("on_demand_cluster_timeout"),
		success:  sc.Counter("on_demand_cluster_success"),
	}, nil
}

// discover asks for the cluster name and reports whether it came in
// time, counting the attempt and its outcome.
func (o *onDemand) discover(ctx context.Context, name string) bool {
	o.attempt.Inc()
	if o.clusters.Discover(ctx, name, o.timeout) {
		o.success.Inc()
		return true
	}
	if ctx.Err() == nil {
		o.timedOut.Inc()
	}
	return false
}
