// Package dynamicforwardproxy is the HTTP dynamic forward proxy filter
// (envoy.filters.http.dynamic_forward_proxy). For a request whose route
// goes to a dynamic_forward_proxy cluster, it loads the request's Host
// into the filter's DNS cache, which the cluster shares, and holds the
// request until the name is resolved: the cluster then has a host for it.
// A name that does not resolve is answered 503 with the details
// dns_resolution_failure{...} and the response flag DF; a full cache
// (max_hosts) 503 dns_cache_overflow; too many requests waiting for
// resolutions (dns_cache_circuit_breaker) 503
// dynamic_forward_proxy_pending_request_overflow. The per-route
// configuration rewrites the Host first (host_rewrite_literal,
// host_rewrite_header). Requests to other clusters pass untouched.
package dynamicforwardproxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	dfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.dynamic_forward_proxy"

// Envoy's local reply bodies and response code details.
const (
	bodyOverflow          = "DNS cache overflow"
	detailsOverflow       = "dns_cache_overflow"
	bodyPendingOverflow   = "Dynamic forward proxy pending request overflow"
	detailsPendingOverflw = "dynamic_forward_proxy_pending_request_overflow"
	bodyResolution        = "DNS resolution failure"
	detailsResolution     = "dns_resolution_failure"
	bodySubOverflow       = "Sub cluster overflow"
	detailsSubOverflow    = "sub_cluster_overflow"
	bodySubTimeout        = "Sub cluster warming timeout"
	detailsSubTimeout     = "sub_cluster_warming_timeout"
)

// defaultInitTimeout is cluster_init_timeout's default.
const defaultInitTimeout = 5 * time.Second

// Caches is what the server gives the filter: the DNS caches it shares
// with the dynamic_forward_proxy clusters (httpfilter.Services implements
// it).
type Caches interface {
	DNSCaches() *dnscache.Manager
}

// Cluster is a route's cluster as the filter sees it: a
// dynamic_forward_proxy cluster reports true, with the port of hosts
// named without one.
type Cluster interface {
	DynamicForwardProxy() (defaultPort uint16, ok bool)
}

// SubClusters is a dynamic_forward_proxy cluster with sub_clusters_config
// as the filter sees it (the cluster package's Cluster implements it).
type SubClusters interface {
	UsesSubClusters() bool
	LoadSubCluster(host string, defaultPort uint16) (<-chan struct{}, upstream.SubClusterStatus)
}

// Factory builds the filter and compiles its per-route configuration.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*dfpv3.FilterConfig)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&dfpv3.FilterConfig{}), config)
	}
	f := &filter{name: ctx.Name, services: ctx.Services, saveAddress: c.GetSaveUpstreamAddress(), fromFilterState: c.GetAllowDynamicHostFromFilterState(), initTimeout: defaultInitTimeout}
	if sc := c.GetSubClusterConfig(); sc != nil {
		// The filter then has no DNS cache: the sub-clusters resolve.
		if d := sc.GetClusterInitTimeout(); d != nil {
			if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
				return nil, errors.New("sub_cluster_config.cluster_init_timeout: must be greater than 0")
			}
			f.initTimeout = d.AsDuration()
		}
		return f, nil
	}
	dc := c.GetDnsCacheConfig()
	if dc == nil {
		return nil, errors.New("dns_cache_config: required")
	}
	caches, ok := ctx.Services.(Caches)
	if !ok || caches.DNSCaches() == nil {
		return nil, errors.New("dns_cache_config: the server has no DNS cache manager")
	}
	cache, err := caches.DNSCaches().ForConfig(dc)
	if err != nil {
		return nil, fieldpath.Prefix("dns_cache_config.", err)
	}
	f.cache = cache
	return f, nil
}

// CompileRoute implements httpfilter.RouteFactory: a PerRouteConfig.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*dfpv3.PerRouteConfig)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&dfpv3.PerRouteConfig{}), config)
	}
	rc := &routeConfig{literal: c.GetHostRewriteLiteral(), header: strings.ToLower(c.GetHostRewriteHeader())}
	return rc, nil
}

// routeConfig is a compiled PerRouteConfig: one of its rewrites.
type routeConfig struct {
	literal string
	header  string
}

// filter is the compiled filter; it keeps nothing per request, so one
// value serves them all.
type filter struct {
	name string
	// cache is the filter's DNS cache, nil with sub_cluster_config.
	cache    *dnscache.Cache
	services httpfilter.Services
	// saveAddress is save_upstream_address: the resolved address goes to
	// the request's filter state (envoy.stream.upstream_address).
	saveAddress bool
	// fromFilterState is allow_dynamic_host_from_filter_state: the
	// filter state's envoy.upstream.dynamic_host and dynamic_port come
	// before the Host, as the cluster picks by them.
	fromFilterState bool
	// initTimeout is sub_cluster_config.cluster_init_timeout: how long a
	// request waits for its sub-cluster to warm.
	initTimeout time.Duration
}

var _ httpfilter.Decoder = (*filter)(nil)

// NewFilter implements httpfilter.Config.
func (f *filter) NewFilter() httpfilter.Filter { return f }

// DecodeHeaders loads the request's host when its route goes to a
// dynamic_forward_proxy cluster, as Envoy's decodeHeaders.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	name := s.ClusterName()
	if name == "" || f.services == nil {
		return httpfilter.Continue
	}
	cl, ok := f.services.Cluster(name).(Cluster)
	if !ok {
		return httpfilter.Continue
	}
	port, ok := cl.DynamicForwardProxy()
	if !ok {
		return httpfilter.Continue
	}
	if rc, _ := s.RouteConfig(f.name).(*routeConfig); rc != nil {
		rewriteHost(s, rc)
	}
	if sc, ok := cl.(SubClusters); ok && sc.UsesSubClusters() {
		return f.loadSubCluster(s, sc, port)
	}
	if f.cache == nil {
		// sub_cluster_config, and a cluster that follows a DNS cache:
		// nothing to load; the cluster has no host for the request.
		return httpfilter.Continue
	}
	host := s.Request().Host
	if f.fromFilterState {
		host, port = dynamicTarget(s, host, port)
	}
	if host == "" {
		// Nothing to resolve (an HTTP/1.0 request without Host): the
		// cluster finds no host for it.
		return httpfilter.Continue
	}
	release, ok := f.cache.AcquirePending()
	if !ok {
		s.SendLocalReply(http.StatusServiceUnavailable, bodyPendingOverflow, 0, detailsPendingOverflw)
		return httpfilter.Stop
	}
	defer release()
	h, st := f.cache.Load(host, port)
	switch st {
	case dnscache.Overflow:
		s.SendLocalReply(http.StatusServiceUnavailable, bodyOverflow, 0, detailsOverflow)
		return httpfilter.Stop
	case dnscache.Loading:
		if !s.Wait(h.Done()) {
			return httpfilter.Stop
		}
	}
	addr, ok := h.Address()
	if !ok {
		s.SendLocalReply(http.StatusServiceUnavailable, bodyResolution, accesslog.DNSResolutionFailed, detailsResolution+"{"+h.Details()+"}")
		return httpfilter.Stop
	}
	if f.saveAddress {
		// As Envoy's addHostAddressToFilterState: the request's, with
		// the port the cache resolved the name with.
		s.SetFilterState(netfilter.UpstreamAddressStateKey, filterstate.Address(addr))
	}
	return httpfilter.Continue
}

// loadSubCluster holds the request until the sub-cluster of its Host
// serves, as Envoy's loadDynamicCluster: a cluster at max_sub_clusters is
// answered 503 sub_cluster_overflow, one still warming after
// cluster_init_timeout 503 sub_cluster_warming_timeout. The Host alone
// names the sub-cluster, as in Envoy (not the filter state).
func (f *filter) loadSubCluster(s httpfilter.Stream, sc SubClusters, port uint16) httpfilter.Status {
	ready, st := sc.LoadSubCluster(s.Request().Host, port)
	switch st {
	case upstream.SubClusterReady:
		return httpfilter.Continue
	case upstream.SubClusterOverflow, upstream.SubClusterFailed:
		// A sub-cluster that could not be made is an overflow too: the
		// request cannot have one.
		s.SendLocalReply(http.StatusServiceUnavailable, bodySubOverflow, 0, detailsSubOverflow)
		return httpfilter.Stop
	}
	timer := time.NewTimer(f.initTimeout)
	defer timer.Stop()
	done, quit := make(chan struct{}), make(chan struct{})
	defer close(quit)
	var timedOut atomic.Bool
	go func() {
		defer close(done)
		select {
		case <-ready:
		case <-timer.C:
			timedOut.Store(true)
		case <-quit:
			// The request went away first.
		}
	}()
	if !s.Wait(done) {
		return httpfilter.Stop
	}
	if timedOut.Load() {
		s.SendLocalReply(http.StatusServiceUnavailable, bodySubTimeout, 0, detailsSubTimeout)
		return httpfilter.Stop
	}
	return httpfilter.Continue
}

// dynamicTarget is what allow_dynamic_host_from_filter_state loads: the
// filter state's envoy.upstream.dynamic_host (the request's, else its
// connection's) in place of host, and its envoy.upstream.dynamic_port, a
// port, in place of the default port of a host named without one.
func dynamicTarget(s httpfilter.Stream, host string, port uint16) (string, uint16) {
	if v, ok := s.FilterStateValue(netfilter.DynamicHostStateKey); ok {
		if h, ok := filterstate.StringAccessorOf(v); ok {
			host = h
		}
	}
	if v, ok := s.FilterStateValue(netfilter.DynamicPortStateKey); ok {
		if p, ok := v.(filterstate.UInt32); ok && p > 0 && p <= 65535 {
			port = uint16(p)
		}
	}
	return host, port
}

// rewriteHost applies a route's rewrite: the literal, else the first
// value of the header when the request has it (the header is untrusted:
// only its first value counts, as in Envoy).
func rewriteHost(s httpfilter.Stream, rc *routeConfig) {
	if rc.literal != "" {
		s.SetAuthority(rc.literal)
		return
	}
	if rc.header == "" {
		return
	}
	hdrs := s.RequestHeaders()
	var (
		v  string
		ok bool
	)
	if hf, isFields := hdrs.(router.HeaderFields); isFields {
		v, ok = hf.Field(rc.header, 0)
	} else {
		v, ok = hdrs.Get(rc.header)
	}
	if ok {
		s.SetAuthority(v)
	}
}
