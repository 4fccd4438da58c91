//lint:file-ignore SA1019 Envoy still reads the deprecated resolver fields

package dns

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	gaiv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/getaddrinfo/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// Category is Envoy's extension category of DNS resolvers.
const Category = "envoy.network.dns_resolver"

// The resolver extensions' names (proxy. spelling; envoy. works too).
const (
	CaresName       = "proxy.network.dns_resolver.cares"
	GetAddrInfoName = "proxy.network.dns_resolver.getaddrinfo"
)

// maxQueryTimeout bounds query_timeout_seconds: longer would only hide a
// mistake, and keeps the product with the tries far from overflowing.
const maxQueryTimeout = time.Hour

// defaultDNSPort is a resolver's port when its address gives none.
const defaultDNSPort = 53

// Spec is a checked resolver configuration, ready to build resolvers from.
type Spec interface {
	// Name is the extension's name, for logs.
	Name() string
	// New builds a resolver.
	New(env Env) Resolver
}

// Factory compiles a resolver extension's typed_config: the registry's
// Factory for the category envoy.network.dns_resolver. Errors carry paths
// relative to the config message.
type Factory interface {
	Compile(cfg proto.Message) (Spec, []error)
}

// CaresFactory is the c-ares resolver's factory.
type CaresFactory struct{}

// Compile checks a CaresDnsResolverConfig.
func (CaresFactory) Compile(cfg proto.Message) (Spec, []error) {
	c, ok := cfg.(*caresv3.CaresDnsResolverConfig)
	if !ok {
		return nil, []error{fieldErrorf("", "expected %s, got %s", proto.MessageName(&caresv3.CaresDnsResolverConfig{}), proto.MessageName(cfg))}
	}
	return compileCares(c)
}

// GetAddrInfoFactory is the getaddrinfo resolver's factory.
type GetAddrInfoFactory struct{}

// Compile checks a GetAddrInfoDnsResolverConfig.
func (GetAddrInfoFactory) Compile(cfg proto.Message) (Spec, []error) {
	c, ok := cfg.(*gaiv3.GetAddrInfoDnsResolverConfig)
	if !ok {
		return nil, []error{fieldErrorf("", "expected %s, got %s", proto.MessageName(&gaiv3.GetAddrInfoDnsResolverConfig{}), proto.MessageName(cfg))}
	}
	o := GetAddrInfoOptions{Threads: 1, Retries: -1}
	if t := c.GetNumResolverThreads(); t != nil {
		o.Threads = int(min(t.GetValue(), maxGetAddrInfoThreads))
		if o.Threads == 0 {
			o.Threads = 1
		}
	}
	if r := c.GetNumRetries(); r != nil {
		o.Retries = int(min(r.GetValue(), 1<<20))
	}
	return getAddrInfoSpec{o}, nil
}

type caresSpec struct{ opts CaresOptions }

func (caresSpec) Name() string               { return CaresName }
func (s caresSpec) New(env Env) Resolver     { return NewCares(s.opts, env) }
func (s caresSpec) Options() CaresOptions    { return s.opts }
func (getAddrInfoSpec) Name() string         { return GetAddrInfoName }
func (s getAddrInfoSpec) New(e Env) Resolver { return NewGetAddrInfo(s.opts, e) }

type getAddrInfoSpec struct{ opts GetAddrInfoOptions }

// CaresSpec is the spec of a c-ares resolver with these options (the
// default resolver is CaresSpec(CaresOptions{})).
func CaresSpec(o CaresOptions) Spec { return caresSpec{o} }

// compileCares checks a CaresDnsResolverConfig; paths are relative to it.
func compileCares(c *caresv3.CaresDnsResolverConfig) (Spec, []error) {
	var errs []error
	o := CaresOptions{
		UseResolversAsFallback:   c.GetUseResolversAsFallback(),
		FilterUnroutableFamilies: c.GetFilterUnroutableFamilies(),
		Rotate:                   c.GetRotateNameservers(),
		UseTCP:                   c.GetDnsResolverOptions().GetUseTcpForDnsLookups(),
		NoSearch:                 c.GetDnsResolverOptions().GetNoDefaultSearchDomain(),
	}
	var rerrs []error
	o.Resolvers, rerrs = resolverAddresses(c.GetResolvers(), "resolvers")
	errs = append(errs, rerrs...)
	if t := c.GetQueryTimeoutSeconds(); t != nil {
		switch v := t.GetValue(); {
		case v == 0:
			errs = append(errs, fieldErrorf("query_timeout_seconds", "must be at least 1"))
		case v > uint64(maxQueryTimeout/time.Second):
			errs = append(errs, fieldErrorf("query_timeout_seconds", "%d is above %d (an hour)", v, uint64(maxQueryTimeout/time.Second)))
		default:
			o.QueryTimeout = time.Duration(v) * time.Second
		}
	}
	if t := c.GetQueryTries(); t != nil {
		switch v := t.GetValue(); {
		case v == 0:
			errs = append(errs, fieldErrorf("query_tries", "must be at least 1"))
		case v > 100:
			errs = append(errs, fieldErrorf("query_tries", "%d is above 100", v))
		default:
			o.QueryTries = int(v)
		}
	}
	if p := c.GetEdns0MaxPayloadSize(); p != nil {
		if v := p.GetValue(); v < 512 || v > 4096 {
			errs = append(errs, fieldErrorf("edns0_max_payload_size", "%d is outside 512 to 4096", v))
		} else {
			o.EDNSPayload = uint16(v)
		}
	}
	if q := c.GetQcacheMaxTtl(); q != nil && q.GetValue() > 0 {
		errs = append(errs, fieldErrorf("qcache_max_ttl", "the c-ares query cache is not supported by Outrigger (0, the default, disables it)"))
	}
	// udp_max_queries, max_udp_channel_duration and
	// reinit_channel_on_timeout limit how long c-ares reuses its sockets:
	// every attempt here has a socket of its own, which meets any limit.
	return caresSpec{o}, errs
}

// resolverAddresses converts resolver addresses (IP literals; port 53
// when unset); path is the list's.
func resolverAddresses(list []*corev3.Address, path string) ([]string, []error) {
	var (
		out  []string
		errs []error
	)
	for i, a := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		sa := a.GetSocketAddress()
		if sa == nil {
			errs = append(errs, fieldErrorf(p, "a DNS resolver must be a socket address (an IP and a port)"))
			continue
		}
		ip, err := netip.ParseAddr(sa.GetAddress())
		if err != nil {
			errs = append(errs, fieldErrorf(p+".socket_address.address", "DNS resolver %q is not an IP address", sa.GetAddress()))
			continue
		}
		port := sa.GetPortValue()
		if port > 65535 {
			errs = append(errs, fieldErrorf(p+".socket_address.port_value", "%d is not a port (1 to 65535)", port))
			continue
		}
		if port == 0 {
			port = defaultDNSPort
		}
		out = append(out, net.JoinHostPort(ip.String(), fmt.Sprint(port)))
	}
	return out, errs
}

// FromTyped compiles a typed_dns_resolver_config: its typed_config must be
// a DNS resolver extension of the registry, enabled (or, without
// typed_config, its name must be one). Errors are relative to the
// TypedExtensionConfig.
func FromTyped(tec *corev3.TypedExtensionConfig, reg *extension.Registry) (Spec, []error) {
	var (
		ext extension.Extension
		ok  bool
		cfg proto.Message
	)
	a := tec.GetTypedConfig()
	switch {
	case reg == nil:
		return nil, []error{fieldErrorf("typed_config", "no DNS resolver extension is available")}
	case a.GetTypeUrl() != "":
		ext, ok = reg.Lookup(a.GetTypeUrl())
		if !ok {
			return nil, []error{fieldErrorf("typed_config", "extension %q is not supported by Outrigger", extension.TypeName(a.GetTypeUrl()))}
		}
		m, err := a.UnmarshalNew()
		if err != nil {
			return nil, []error{fieldErrorf("typed_config", "decode %s: %v", extension.TypeName(a.GetTypeUrl()), err)}
		}
		cfg = m
	default:
		ext, ok = reg.ByName(Category, tec.GetName())
		if !ok {
			return nil, []error{fieldErrorf("name", "%q is not a DNS resolver extension of Outrigger (supported: envoy.network.dns_resolver.cares, envoy.network.dns_resolver.getaddrinfo)", tec.GetName())}
		}
		cfg = proto.Clone(ext.Config)
	}
	switch {
	case ext.Disabled:
		return nil, []error{fieldErrorf("typed_config", "extension %q is disabled by --disable-extensions", ext.Name)}
	case ext.Category != Category:
		return nil, []error{fieldErrorf("typed_config", "extension %q (category %s) cannot be used here: expected category %s", ext.Name, ext.Category, Category)}
	}
	f, ok := ext.Factory.(Factory)
	if !ok {
		return nil, []error{fieldErrorf("typed_config", "extension %q has no resolver factory", ext.Name)}
	}
	spec, errs := f.Compile(cfg)
	for i, err := range errs {
		errs[i] = prefixed("typed_config", err)
	}
	return spec, errs
}

// ForBootstrap compiles the server's resolver from the bootstrap, as
// Envoy chooses it: typed_dns_resolver_config, else the deprecated
// dns_resolution_config, else the c-ares resolver with the deprecated
// use_tcp_for_dns_lookups. Errors are relative to the bootstrap.
func ForBootstrap(b *bootstrapv3.Bootstrap, reg *extension.Registry) (Spec, []error) {
	if tec := b.GetTypedDnsResolverConfig(); tec != nil {
		return prefixAll(FromTyped(tec, reg))("typed_dns_resolver_config")
	}
	if rc := b.GetDnsResolutionConfig(); rc != nil {
		return resolutionConfig(rc, "dns_resolution_config")
	}
	return caresSpec{CaresOptions{UseTCP: b.GetUseTcpForDnsLookups()}}, nil
}

// ForCluster compiles a DNS cluster's own resolver, or returns nil when
// the cluster uses the server's: as in Envoy, a cluster has its own
// resolver only when typed_dns_resolver_config has a typed_config, or
// dns_resolution_config or dns_resolvers names resolvers. Its config is
// then typed_dns_resolver_config, else dns_resolution_config, else the
// c-ares resolver with dns_resolvers and use_tcp_for_dns_lookups. Errors
// are relative to the cluster.
func ForCluster(c *clusterv3.Cluster, reg *extension.Registry) (Spec, []error) {
	tec := c.GetTypedDnsResolverConfig()
	rc, legacy := c.GetDnsResolutionConfig(), c.GetDnsResolvers()
	if tec.GetTypedConfig().GetTypeUrl() == "" && len(rc.GetResolvers()) == 0 && len(legacy) == 0 {
		return nil, nil
	}
	switch {
	case tec != nil:
		return prefixAll(FromTyped(tec, reg))("typed_dns_resolver_config")
	case rc != nil:
		return resolutionConfig(rc, "dns_resolution_config")
	}
	resolvers, errs := resolverAddresses(legacy, "dns_resolvers")
	return caresSpec{CaresOptions{Resolvers: resolvers, UseTCP: c.GetUseTcpForDnsLookups()}}, errs
}

// FromResolutionConfig converts a deprecated DnsResolutionConfig into the
// c-ares resolver it stands for, as Envoy does. Errors are relative to
// the field holding it, path.
func FromResolutionConfig(rc *corev3.DnsResolutionConfig, path string) (Spec, []error) {
	return resolutionConfig(rc, path)
}

// resolutionConfig converts a deprecated DnsResolutionConfig into the
// c-ares resolver it stands for.
func resolutionConfig(rc *corev3.DnsResolutionConfig, path string) (Spec, []error) {
	resolvers, errs := resolverAddresses(rc.GetResolvers(), path+".resolvers")
	return caresSpec{CaresOptions{
		Resolvers: resolvers,
		UseTCP:    rc.GetDnsResolverOptions().GetUseTcpForDnsLookups(),
		NoSearch:  rc.GetDnsResolverOptions().GetNoDefaultSearchDomain(),
	}}, errs
}

// prefixAll moves a compile result's errors under path.
func prefixAll(spec Spec, errs []error) func(path string) (Spec, []error) {
	return func(path string) (Spec, []error) {
		for i, err := range errs {
			errs[i] = prefixed(path, err)
		}
		return spec, errs
	}
}

// ConfigError is one problem of a resolver configuration, located by the
// proto-style path of its field (relative to what the function reading it
// was given).
type ConfigError = fieldpath.Error

func fieldErrorf(path, format string, args ...any) *ConfigError {
	return fieldpath.Errorf(path, format, args...)
}

// prefixed moves err's path under prefix.
func prefixed(prefix string, err error) error { return fieldpath.Under(prefix, err) }
