package snidynamicforwardproxy

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	snidfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

type oneName struct{}

func (oneName) Resolve(_ context.Context, name string, _ dns.Family) dns.Result {
	if name != "a.test" {
		return dns.Result{Status: dns.Completed}
	}
	return dns.Result{Status: dns.Completed, Addresses: []dns.Address{{IP: netip.MustParseAddr("10.0.0.1")}}}
}

// clusters are the server's clusters as the filter sees them: only the
// DNS caches.
type clusters struct{ m *dnscache.Manager }

func (clusters) Cluster(string) netfilter.Cluster { return nil }
func (c clusters) DNSCaches() *dnscache.Manager   { return c.m }

type conn struct {
	net.Conn
	netfilter.ConnState
	sni string
}

func (c *conn) RequestedServerName() string { return c.sni }
func (c *conn) OnClose(func())              {}

func config(port uint32) *snidfpv3.FilterConfig {
	return &snidfpv3.FilterConfig{
		DnsCacheConfig: &dfpcommonv3.DnsCacheConfig{Name: "c"},
		PortSpecifier:  &snidfpv3.FilterConfig_PortValue{PortValue: port},
	}
}

func TestLoadsTheServerName(t *testing.T) {
	m := dnscache.NewManager(dnscache.Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver { return oneName{} }})
	m.Start()
	defer m.Close()
	f, err := Factory{}.Compile(config(8443), netfilter.Context{Clusters: clusters{m}})
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{sni: "a.test"}
	if r := f.(netfilter.ReadFilter).OnNewConnection(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	if v, ok := c.FilterState(netfilter.DynamicPortStateKey); !ok || v != filterstate.UInt32(8443) {
		t.Errorf("dynamic port %v %v", v, ok)
	}
	cache, _ := m.ForConfig(&dfpcommonv3.DnsCacheConfig{Name: "c"})
	h := cache.Lookup("a.test:8443")
	if h == nil {
		t.Fatal("the name was not loaded")
	}
	if addr, ok := h.Address(); !ok || addr.String() != "10.0.0.1:8443" {
		t.Errorf("address %v %v: the connection went on before the resolution", addr, ok)
	}
}

func TestCompileErrors(t *testing.T) {
	m := dnscache.NewManager(dnscache.Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver { return oneName{} }})
	for cfg, want := range map[*snidfpv3.FilterConfig]string{
		config(0): "port_value: required",
		{PortSpecifier: &snidfpv3.FilterConfig_PortValue{PortValue: 1}}: "dns_cache_config: required",
	} {
		if _, err := (Factory{}).Compile(cfg, netfilter.Context{Clusters: clusters{m}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if _, err := (Factory{}).Compile(config(443), netfilter.Context{}); err == nil {
		t.Error("compiled without a DNS cache manager")
	}
}

// TestSaveUpstreamAddress: with save_upstream_address, the connection's
// envoy.stream.upstream_address is the server name's resolved address at
// the port it was loaded with; none for a name that did not resolve.
func TestSaveUpstreamAddress(t *testing.T) {
	m := dnscache.NewManager(dnscache.Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver { return oneName{} }})
	m.Start()
	defer m.Close()
	cfg := config(8443)
	cfg.SaveUpstreamAddress = true
	f, err := Factory{}.Compile(cfg, netfilter.Context{Clusters: clusters{m}})
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{sni: "a.test"}
	if r := f.(netfilter.ReadFilter).OnNewConnection(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	v, ok := c.FilterState(netfilter.UpstreamAddressStateKey)
	if a, _ := v.(filterstate.Address); !ok || netip.AddrPort(a).String() != "10.0.0.1:8443" {
		t.Errorf("envoy.stream.upstream_address = %v %v, want 10.0.0.1:8443", v, ok)
	}
	none := &conn{sni: "nowhere.test"}
	_ = f.(netfilter.ReadFilter).OnNewConnection(none)
	if v, ok := none.FilterState(netfilter.UpstreamAddressStateKey); ok {
		t.Errorf("an address saved for a name that did not resolve: %v", v)
	}
}

// TestDynamicHostFromFilterState: the connection's
// envoy.upstream.dynamic_host comes before its server name, as in Envoy.
func TestDynamicHostFromFilterState(t *testing.T) {
	m := dnscache.NewManager(dnscache.Options{Stats: stats.NewStore(), Resolver: func() dns.Resolver { return oneName{} }})
	m.Start()
	defer m.Close()
	f, err := Factory{}.Compile(config(8443), netfilter.Context{Clusters: clusters{m}})
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{sni: "other.test"}
	c.SetFilterState(netfilter.DynamicHostStateKey, filterstate.String("a.test"))
	if r := f.(netfilter.ReadFilter).OnNewConnection(c); r != nil {
		t.Fatalf("refused: %+v", r)
	}
	cache, _ := m.ForConfig(&dfpcommonv3.DnsCacheConfig{Name: "c"})
	if cache.Lookup("a.test:8443") == nil || cache.Lookup("other.test:8443") != nil {
		t.Error("the filter state's host was not what was loaded")
	}
}
