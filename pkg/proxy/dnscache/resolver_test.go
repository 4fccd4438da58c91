//lint:file-ignore SA1019 the deprecated resolver fields are the subject of these tests

package dnscache

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// caresOptions are the options of a c-ares spec.
func caresOptions(t *testing.T, s dns.Spec) dns.CaresOptions {
	t.Helper()
	c, ok := s.(interface{ Options() dns.CaresOptions })
	if !ok {
		t.Fatalf("spec %T is not a c-ares resolver", s)
	}
	return c.Options()
}

func TestDeprecatedResolverFields(t *testing.T) {
	// dns_resolution_config is a c-ares resolver of the cache's own.
	cfg, errs := Compile(&dfpcommonv3.DnsCacheConfig{
		Name: "rc",
		DnsResolutionConfig: &corev3.DnsResolutionConfig{
			Resolvers: []*corev3.Address{{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 5353}}}}},
			DnsResolverOptions: &corev3.DnsResolverOptions{UseTcpForDnsLookups: true, NoDefaultSearchDomain: true},
		},
	}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	o := caresOptions(t, cfg.Resolver)
	if len(o.Resolvers) != 1 || o.Resolvers[0] != "127.0.0.1:5353" || !o.UseTCP || !o.NoSearch {
		t.Errorf("dns_resolution_config gave %+v", o)
	}

	// A bad resolver address is refused with its path.
	_, errs = Compile(&dfpcommonv3.DnsCacheConfig{
		Name: "bad",
		DnsResolutionConfig: &corev3.DnsResolutionConfig{Resolvers: []*corev3.Address{{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "not-an-ip", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 53}}}}}},
	}, nil)
	if len(errs) == 0 || !containsPath(errs, "dns_resolution_config.resolvers[0]") {
		t.Errorf("errors %v, want one under dns_resolution_config.resolvers[0]", errs)
	}

	// use_tcp_for_dns_lookups alone is the legacy c-ares resolver.
	cfg, errs = Compile(&dfpcommonv3.DnsCacheConfig{Name: "tcp", UseTcpForDnsLookups: true}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if cfg.Resolver != nil || !caresOptions(t, cfg.Legacy).UseTCP {
		t.Errorf("use_tcp_for_dns_lookups: resolver %v, legacy %+v", cfg.Resolver, cfg.Legacy)
	}
}

func containsPath(errs []error, path string) bool {
	for _, err := range errs {
		if len(err.Error()) >= len(path) && err.Error()[:len(path)] == path {
			return true
		}
	}
	return false
}

func TestLegacyResolverOnlyWithoutATypedServerResolver(t *testing.T) {
	server := &fakeResolver{}
	for _, untyped := range []bool{false, true} {
		store := stats.NewStore()
		m := NewManager(Options{Stats: store, Env: dns.Env{Stats: store}, Resolver: func() dns.Resolver { return server }, ServerUntyped: untyped})
		c, err := m.ForConfig(&dfpcommonv3.DnsCacheConfig{Name: "l", UseTcpForDnsLookups: true})
		if err != nil {
			t.Fatal(err)
		}
		_, own := c.resolver.(*dns.Cares)
		// As Envoy: a typed bootstrap resolver wins over the cache's
		// use_tcp_for_dns_lookups; without one the cache builds c-ares.
		if own != untyped {
			t.Errorf("server untyped %v: the cache's resolver is %T", untyped, c.resolver)
		}
		m.Close()
	}
}
