package dynamicforwardproxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	dfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// table resolves names from a map; others do not exist.
type table map[string]string

func (t table) Resolve(_ context.Context, name string, _ dns.Family) dns.Result {
	ip, ok := t[name]
	if !ok {
		return dns.Result{Status: dns.Completed, Details: "not found"}
	}
	return dns.Result{Status: dns.Completed, Addresses: []dns.Address{{IP: netip.MustParseAddr(ip)}}}
}

// cluster is a route's cluster: dfp says whether it is a dynamic forward
// proxy cluster.
type cluster struct{ dfp bool }

func (cluster) Connect(context.Context) (net.Conn, error) { return nil, errors.New("unused") }
func (c cluster) DynamicForwardProxy() (uint16, bool)     { return 80, c.dfp }

// services are the server's: the caches and two clusters.
type services struct{ caches *dnscache.Manager }

func (services) OpenGRPC(*corev3.GrpcService) (*grpcservice.Channel, error) {
	return nil, errors.New("unused")
}
func (services) Cluster(name string) grpcservice.Cluster {
	return cluster{dfp: name == "dfp"}
}
func (s services) DNSCaches() *dnscache.Manager { return s.caches }

func compile(t *testing.T, cfg *dfpv3.FilterConfig) httpfilter.Config {
	t.Helper()
	m := dnscache.NewManager(dnscache.Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver {
		return table{"a.test": "10.0.0.1", "b.test": "10.0.0.2"}
	}})
	m.Start()
	t.Cleanup(m.Close)
	c, err := Factory{}.Compile(cfg, httpfilter.Context{Name: "dfp", Services: services{m}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cacheConfig(name string) *dfpv3.FilterConfig {
	return &dfpv3.FilterConfig{ImplementationSpecifier: &dfpv3.FilterConfig_DnsCacheConfig{DnsCacheConfig: &dfpcommonv3.DnsCacheConfig{Name: name, MaxHosts: wrapperspb.UInt32(3)}}}
}

func TestDecodeHeaders(t *testing.T) {
	cfg := compile(t, cacheConfig("c"))
	run := func(s *httpfiltertest.Stream) httpfilter.Status {
		return cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	}

	other := &httpfiltertest.Stream{Cluster: "static"}
	other.Req.Host = "nowhere.test"
	if st := run(other); st != httpfilter.Continue || other.Reply != nil {
		t.Errorf("a request to another cluster: %v %+v", st, other.Reply)
	}

	hostless := &httpfiltertest.Stream{Cluster: "dfp"}
	if st := run(hostless); st != httpfilter.Continue || hostless.Reply != nil {
		t.Errorf("a request without Host: %v %+v", st, hostless.Reply)
	}

	ok := &httpfiltertest.Stream{Cluster: "dfp"}
	ok.Req.Host = "a.test"
	if st := run(ok); st != httpfilter.Continue || ok.Reply != nil {
		t.Errorf("a resolvable host: %v %+v", st, ok.Reply)
	}

	bad := &httpfiltertest.Stream{Cluster: "dfp"}
	bad.Req.Host = "nowhere.test"
	if st := run(bad); st != httpfilter.Stop || bad.Reply == nil {
		t.Fatalf("an unknown host: %v", st)
	}
	if r := bad.Reply; r.Status != 503 || r.Body != "DNS resolution failure" || r.Flags != accesslog.DNSResolutionFailed || !strings.HasPrefix(r.Details, "dns_resolution_failure{") {
		t.Errorf("the reply %+v", r)
	}

	rewritten := &httpfiltertest.Stream{Cluster: "dfp", PerRoute: map[string][]httpfilter.RouteConfig{"dfp": {&routeConfig{header: "x-target"}}}}
	rewritten.Req.Host = "nowhere.test"
	rewritten.ReqHeaders = httpfiltertest.NewHeaders("x-target", "b.test:8080")
	if st := run(rewritten); st != httpfilter.Continue || rewritten.Req.Host != "b.test:8080" {
		t.Errorf("host_rewrite_header: %v, host %q", st, rewritten.Req.Host)
	}
	literal := &httpfiltertest.Stream{Cluster: "dfp", PerRoute: map[string][]httpfilter.RouteConfig{"dfp": {&routeConfig{literal: "a.test"}}}}
	literal.Req.Host = "nowhere.test"
	if st := run(literal); st != httpfilter.Continue || literal.Req.Host != "a.test" {
		t.Errorf("host_rewrite_literal: %v, host %q", st, literal.Req.Host)
	}

	// Three hosts now (a.test:80, nowhere.test:80, b.test:8080): max_hosts
	// 3 refuses a new one.
	full := &httpfiltertest.Stream{Cluster: "dfp"}
	full.Req.Host = "c.test"
	if st := run(full); st != httpfilter.Stop || full.Reply == nil || full.Reply.Details != "dns_cache_overflow" || full.Reply.Body != "DNS cache overflow" {
		t.Errorf("a full cache: %v %+v", st, full.Reply)
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		cfg  *dfpv3.FilterConfig
		want string
	}{
		"no cache":                   {&dfpv3.FilterConfig{}, "dns_cache_config: required"},
		"cache without a name":       {cacheConfig(""), "dns_cache_config.name: required"},
		"sub clusters' zero timeout": {&dfpv3.FilterConfig{ImplementationSpecifier: &dfpv3.FilterConfig_SubClusterConfig{SubClusterConfig: &dfpv3.SubClusterConfig{ClusterInitTimeout: durationpb.New(0)}}}, "sub_cluster_config.cluster_init_timeout: must be greater than 0"},
	}
	m := dnscache.NewManager(dnscache.Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver { return table{} }})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.cfg, httpfilter.Context{Services: services{m}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(cacheConfig("c"), httpfilter.Context{}); err == nil {
		t.Error("compiled without a DNS cache manager")
	}
}

// TestSaveUpstreamAddress: with save_upstream_address, a resolved host's
// address (with the port the name was loaded with) is the request's
// envoy.stream.upstream_address; without it, or for a name that did not
// resolve, there is none.
func TestSaveUpstreamAddress(t *testing.T) {
	saving := cacheConfig("c")
	saving.SaveUpstreamAddress = true
	run := func(cfg httpfilter.Config, host string) *httpfiltertest.Stream {
		s := &httpfiltertest.Stream{Cluster: "dfp"}
		s.Req.Host = host
		cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
		return s
	}
	s := run(compile(t, saving), "b.test:8080")
	obj, ok := s.FilterState["envoy.stream.upstream_address"]
	if !ok {
		t.Fatal("no envoy.stream.upstream_address")
	}
	if v, _ := obj.FilterStateString(); v != "10.0.0.2:8080" {
		t.Errorf("envoy.stream.upstream_address = %q, want 10.0.0.2:8080", v)
	}
	if s := run(compile(t, saving), "nowhere.test"); s.FilterState["envoy.stream.upstream_address"] != nil {
		t.Error("an address saved for a name that did not resolve")
	}
	if s := run(compile(t, cacheConfig("c")), "b.test"); s.FilterState["envoy.stream.upstream_address"] != nil {
		t.Error("an address saved without save_upstream_address")
	}
}

// TestDynamicHostFromFilterState: with allow_dynamic_host_from_filter_state
// the filter state's envoy.upstream.dynamic_host and dynamic_port are
// loaded in place of the Host (the request's state, else its
// connection's); without it, the Host is.
func TestDynamicHostFromFilterState(t *testing.T) {
	allowing := cacheConfig("c")
	allowing.AllowDynamicHostFromFilterState = true
	allowing.SaveUpstreamAddress = true
	cfg := compile(t, allowing)
	cache := cfg.(*filter).cache
	s := &httpfiltertest.Stream{Cluster: "dfp", ConnFilterState: map[string]any{"envoy.upstream.dynamic_host": filterstate.String("b.test")}}
	s.SetFilterState("envoy.upstream.dynamic_port", filterstate.UInt32(9000))
	s.Req.Host = "a.test"
	if st := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); st != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("%v %+v", st, s.Reply)
	}
	if cache.Lookup("b.test:9000") == nil || cache.Lookup("a.test:80") != nil {
		t.Error("the filter state's host and port were not what was loaded")
	}
	if v, _ := s.FilterState["envoy.stream.upstream_address"].FilterStateString(); v != "10.0.0.2:9000" {
		t.Errorf("envoy.stream.upstream_address = %q", v)
	}

	// A host without the filter state's: the Host, with the state's port.
	s = &httpfiltertest.Stream{Cluster: "dfp", ConnFilterState: map[string]any{"envoy.upstream.dynamic_port": filterstate.UInt32(7000)}}
	s.Req.Host = "a.test"
	cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if cache.Lookup("a.test:7000") == nil {
		t.Error("a.test:7000 was not loaded")
	}

	plain := compile(t, cacheConfig("c"))
	s = &httpfiltertest.Stream{Cluster: "dfp", ConnFilterState: map[string]any{"envoy.upstream.dynamic_host": filterstate.String("b.test")}}
	s.Req.Host = "a.test"
	plain.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if c := plain.(*filter).cache; c.Lookup("a.test:80") == nil || c.Lookup("b.test:80") != nil {
		t.Error("without the flag the Host was not what was loaded")
	}
}
