package server

import (
	"context"
	"errors"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/healthcheck"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/localratelimit"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/luavm"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// filterServices is how HTTP filters that call a service (ext_authz)
// reach the server's clusters (httpfilter.Services). warm is the
// listener's warming, which waits for the secrets its filters take from
// discovery (nil: none).
type filterServices struct {
	s    *Server
	warm *listenerWarming
}

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

var (
	_ localratelimit.LocalCluster = filterServices{}
	_ healthcheck.Membership      = filterServices{}
)

// ClusterMembership is a cluster's host counts, for the health_check
// filter's cluster_min_healthy_percentages (healthcheck.Membership), read
// when a health check arrives, so clusters discovered later count.
func (f filterServices) ClusterMembership(name string) (total, healthy, degraded int64, ok bool) {
	if f.s.clusters == nil {
		return 0, 0, 0, false
	}
	c := f.s.clusters.Cluster(name)
	if c == nil {
		return 0, 0, 0, false
	}
	st := c.Stats()
	return st.MembershipTotal.Value(), st.MembershipHealthy.Value(), st.MembershipDegraded.Value(), true
}

// LocalClusterMembers is the local cluster (cluster_manager.local_cluster_name)
// and its host count, for local_cluster_rate_limit (see
// localratelimit.LocalCluster). The local cluster is a static one: it
// lasts as long as the server.
func (f filterServices) LocalClusterMembers() (string, *stats.Gauge) {
	name := f.s.boot.GetClusterManager().GetLocalClusterName()
	if name == "" || f.s.clusters == nil {
		return name, nil
	}
	c := f.s.clusters.Cluster(name)
	if c == nil {
		return name, nil
	}
	return name, c.Stats().MembershipTotal
}

// OnDemandClusters is on-demand cluster discovery, for the on_demand HTTP
// filter; nil without an incremental ADS stream.
func (f filterServices) OnDemandClusters() func(context.Context, string, time.Duration) bool {
	od := f.s.onDemand()
	if od == nil {
		return nil
	}
	return od.Discover
}

// DNSCaches are the dynamic forward proxy's DNS caches, which the
// dynamic_forward_proxy filter shares with the clusters.
func (f filterServices) DNSCaches() *dnscache.Manager { return f.s.clusters.DNSCaches() }

// TapRegistry is where tap filters with admin_config register (see the
// tap filter's TapRegistry).
func (f filterServices) TapRegistry() *tap.Registry { return &f.s.taps }

// LuaVMs are the Lua states shared by shared_vm_id (see the Lua filter's
// SharedVMs).
func (f filterServices) LuaVMs() *luavm.Registry { return &f.s.luaVMs }

// Secret finds the secret an SdsSecretConfig names, as TLS contexts find
// theirs (a static secret by name, or one a file or discovery stream
// delivers), for the filters that read a generic secret (oauth2); the
// listener waits for its first value, as Envoy's init manager waits for
// the filter's SdsApi. Errors name the field below the SdsSecretConfig.
func (f filterServices) Secret(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error) {
	if f.s.secrets == nil {
		return nil, errors.New("secrets are not available here")
	}
	p, err := f.s.secrets.resolve(sc)
	if p != nil && f.warm != nil {
		f.warm.addSecret(p)
	}
	return p, err
}

// AddInitTarget makes the listener wait for a filter's target before it
// serves, as Envoy's listener init manager waits for the targets its
// filters add (jwt_authn's async_fetch with fast_listener false); start
// is called when the listener warms. Without a listener, start is called
// at once and nothing waits.
func (f filterServices) AddInitTarget(name string, start func(), ready <-chan struct{}) {
	if f.warm == nil {
		start()
		return
	}
	f.warm.add(initTarget{name: name, ready: ready, start: start})
}

// TapSource is the /tap admin endpoint's source; /tap is present while a
// tap filter with admin_config is configured (Envoy has it only then).
func (s *Server) TapSource() *tap.Registry { return &s.taps }
