//lint:file-ignore SA1019 the deprecated resolver fields are what configurations set

package dns

import (
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	gaiv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/getaddrinfo/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// testRegistry holds the two resolvers and an extension of another
// category, as the builtin list does.
func testRegistry(t *testing.T) *extension.Registry {
	t.Helper()
	r, err := extension.New(
		extension.Of("proxy.filters.http.health_check", "envoy.filters.http", &healthcheckv3.HealthCheck{}, nil),
		extension.Of(CaresName, Category, &caresv3.CaresDnsResolverConfig{}, CaresFactory{}),
		extension.Of(GetAddrInfoName, Category, &gaiv3.GetAddrInfoDnsResolverConfig{}, GetAddrInfoFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func typed(t *testing.T, m proto.Message) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: "envoy.network.dns_resolver.cares", TypedConfig: a}
}

func sock(addr string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port}}}}
}

func errStrings(errs []error) []string {
	var out []string
	for _, err := range errs {
		out = append(out, err.Error())
	}
	return out
}

// caresOptions extracts a c-ares spec's options ("" when another kind).
func caresOptions(s Spec) any {
	switch s := s.(type) {
	case caresSpec:
		return s.opts
	case getAddrInfoSpec:
		return s.opts
	case nil:
		return nil
	}
	return "unexpected spec"
}

func TestForCluster(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		name    string
		cluster *clusterv3.Cluster
		want    any // CaresOptions, GetAddrInfoOptions or nil (the server's)
		errs    []string
	}{
		{"nothing: the server's resolver", &clusterv3.Cluster{}, nil, nil},
		{"use_tcp_for_dns_lookups alone: the server's, as in Envoy", &clusterv3.Cluster{UseTcpForDnsLookups: true}, nil, nil},
		{"typed config", &clusterv3.Cluster{TypedDnsResolverConfig: typed(t, &caresv3.CaresDnsResolverConfig{
			Resolvers:              []*corev3.Address{sock("127.0.0.1", 5353), sock("::1", 0)},
			UseResolversAsFallback: true,
			DnsResolverOptions:     &corev3.DnsResolverOptions{UseTcpForDnsLookups: true, NoDefaultSearchDomain: true},
			QueryTimeoutSeconds:    wrapperspb.UInt64(2),
			QueryTries:             wrapperspb.UInt32(3),
			RotateNameservers:      true,
			Edns0MaxPayloadSize:    wrapperspb.UInt32(4096),
		})}, CaresOptions{
			Resolvers: []string{"127.0.0.1:5353", "[::1]:53"}, UseResolversAsFallback: true, UseTCP: true, NoSearch: true,
			QueryTimeout: 2 * time.Second, QueryTries: 3, Rotate: true, EDNSPayload: 4096,
		}, nil},
		{"getaddrinfo", &clusterv3.Cluster{TypedDnsResolverConfig: typed(t, &gaiv3.GetAddrInfoDnsResolverConfig{
			NumRetries: wrapperspb.UInt32(2), NumResolverThreads: wrapperspb.UInt32(50),
		})}, GetAddrInfoOptions{Threads: 10, Retries: 2}, nil},
		{"dns_resolution_config", &clusterv3.Cluster{DnsResolutionConfig: &corev3.DnsResolutionConfig{
			Resolvers:          []*corev3.Address{sock("127.0.0.1", 53)},
			DnsResolverOptions: &corev3.DnsResolverOptions{NoDefaultSearchDomain: true},
		}}, CaresOptions{Resolvers: []string{"127.0.0.1:53"}, NoSearch: true}, nil},
		{"dns_resolvers and use_tcp_for_dns_lookups", &clusterv3.Cluster{
			DnsResolvers: []*corev3.Address{sock("127.0.0.1", 1053)}, UseTcpForDnsLookups: true,
		}, CaresOptions{Resolvers: []string{"127.0.0.1:1053"}, UseTCP: true}, nil},
		{"typed config wins over the deprecated fields", &clusterv3.Cluster{
			TypedDnsResolverConfig: typed(t, &caresv3.CaresDnsResolverConfig{Resolvers: []*corev3.Address{sock("127.0.0.2", 53)}}),
			DnsResolvers:           []*corev3.Address{sock("127.0.0.1", 1053)},
		}, CaresOptions{Resolvers: []string{"127.0.0.2:53"}}, nil},
		{"a resolver that is a name", &clusterv3.Cluster{DnsResolvers: []*corev3.Address{sock("dns.local", 53)}},
			nil, []string{`dns_resolvers[0].socket_address.address: DNS resolver "dns.local" is not an IP address`}},
		{"a pipe", &clusterv3.Cluster{TypedDnsResolverConfig: typed(t, &caresv3.CaresDnsResolverConfig{
			Resolvers: []*corev3.Address{{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/x"}}}}})},
			nil, []string{"typed_dns_resolver_config.typed_config.resolvers[0]: a DNS resolver must be a socket address (an IP and a port)"}},
		{"another category", &clusterv3.Cluster{TypedDnsResolverConfig: typed(t, &healthcheckv3.HealthCheck{})},
			nil, []string{`typed_dns_resolver_config.typed_config: extension "proxy.filters.http.health_check" (category envoy.filters.http) cannot be used here: expected category envoy.network.dns_resolver`}},
		{"the query cache", &clusterv3.Cluster{TypedDnsResolverConfig: typed(t, &caresv3.CaresDnsResolverConfig{
			Resolvers: []*corev3.Address{sock("127.0.0.1", 53)}, QcacheMaxTtl: wrapperspb.UInt32(60)})},
			nil, []string{"typed_dns_resolver_config.typed_config.qcache_max_ttl: the c-ares query cache is not supported by Outrigger (0, the default, disables it)"}},
		{"bounds", &clusterv3.Cluster{TypedDnsResolverConfig: typed(t, &caresv3.CaresDnsResolverConfig{
			Resolvers:           []*corev3.Address{sock("127.0.0.1", 53)},
			QueryTimeoutSeconds: wrapperspb.UInt64(1 << 40), QueryTries: wrapperspb.UInt32(0), Edns0MaxPayloadSize: wrapperspb.UInt32(100)})},
			nil, []string{
				"typed_dns_resolver_config.typed_config.query_timeout_seconds: 1099511627776 is above 3600 (an hour)",
				"typed_dns_resolver_config.typed_config.query_tries: must be at least 1",
				"typed_dns_resolver_config.typed_config.edns0_max_payload_size: 100 is outside 512 to 4096",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := ForCluster(tc.cluster, reg)
			if diff := cmp.Diff(tc.errs, errStrings(errs)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if len(tc.errs) > 0 {
				return
			}
			if diff := cmp.Diff(tc.want, caresOptions(spec)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForBootstrap(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		name string
		boot *bootstrapv3.Bootstrap
		want any
		errs []string
	}{
		{"default c-ares", &bootstrapv3.Bootstrap{}, CaresOptions{}, nil},
		{"use_tcp_for_dns_lookups", &bootstrapv3.Bootstrap{UseTcpForDnsLookups: true}, CaresOptions{UseTCP: true}, nil},
		{"dns_resolution_config, even without resolvers", &bootstrapv3.Bootstrap{DnsResolutionConfig: &corev3.DnsResolutionConfig{
			DnsResolverOptions: &corev3.DnsResolverOptions{UseTcpForDnsLookups: true}}}, CaresOptions{UseTCP: true}, nil},
		{"typed_dns_resolver_config", &bootstrapv3.Bootstrap{TypedDnsResolverConfig: typed(t, &caresv3.CaresDnsResolverConfig{
			Resolvers: []*corev3.Address{sock("127.0.0.1", 5353)}})}, CaresOptions{Resolvers: []string{"127.0.0.1:5353"}}, nil},
		{"by name without typed_config", &bootstrapv3.Bootstrap{TypedDnsResolverConfig: &corev3.TypedExtensionConfig{
			Name: "envoy.network.dns_resolver.getaddrinfo"}}, GetAddrInfoOptions{Threads: 1, Retries: -1}, nil},
		{"an unknown name", &bootstrapv3.Bootstrap{TypedDnsResolverConfig: &corev3.TypedExtensionConfig{Name: "envoy.network.dns_resolver.apple"}},
			nil, []string{`typed_dns_resolver_config.name: "envoy.network.dns_resolver.apple" is not a DNS resolver extension of Outrigger (supported: envoy.network.dns_resolver.cares, envoy.network.dns_resolver.getaddrinfo)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, errs := ForBootstrap(tc.boot, reg)
			if diff := cmp.Diff(tc.errs, errStrings(errs)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if len(tc.errs) > 0 {
				return
			}
			if diff := cmp.Diff(tc.want, caresOptions(spec)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDisabledResolver(t *testing.T) {
	reg := testRegistry(t)
	if _, err := reg.Disable([]string{"envoy.network.dns_resolver/envoy.network.dns_resolver.getaddrinfo"}); err != nil {
		t.Fatal(err)
	}
	_, errs := FromTyped(typed(t, &gaiv3.GetAddrInfoDnsResolverConfig{}), reg)
	want := []string{`typed_config: extension "proxy.network.dns_resolver.getaddrinfo" is disabled by --disable-extensions`}
	if diff := cmp.Diff(want, errStrings(errs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
