//lint:file-ignore SA1019 the deprecated resolver fields are read as Envoy reads them

package dnscache

import (
	"fmt"
	"net"
	"strconv"
	"time"

	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/keyvalue/filebased"
)

// Envoy's defaults of a DnsCacheConfig.
const (
	defaultRefreshRate    = 60 * time.Second
	defaultMinRefreshRate = 5 * time.Second
	defaultHostTTL        = 5 * time.Minute
	defaultQueryTimeout   = 5 * time.Second
	defaultMaxHosts       = 1024
	defaultMaxPending     = 1024
)

// Config is a checked DnsCacheConfig.
type Config struct {
	Name   string
	Family dns.Family
	// RefreshRate is the delay before resolving again a name whose last
	// answer had no address (dns_refresh_rate); a name with addresses is
	// resolved again after its TTL, at least MinRefreshRate
	// (dns_min_refresh_rate).
	RefreshRate, MinRefreshRate time.Duration
	// HostTTL is how long a host may go unused before it is removed.
	HostTTL time.Duration
	// QueryTimeout bounds each resolution (dns_query_timeout); 0 for no
	// bound of the cache's own.
	QueryTimeout time.Duration
	MaxHosts     int
	// Failure is dns_failure_refresh_rate, nil for RefreshRate after a
	// failure; NoRefreshOnFailure is disable_dns_refresh_on_failure.
	Failure            *dns.Backoff
	NoRefreshOnFailure bool
	// MaxPending is dns_cache_circuit_breaker.max_pending_requests.
	MaxPending int64
	// Preresolve are the hosts (host:port keys) resolved when the cache
	// starts.
	Preresolve []Preresolved
	// Resolver is the cache's own resolver (typed_dns_resolver_config,
	// else the deprecated dns_resolution_config), nil for none.
	Resolver dns.Spec
	// Legacy is the resolver of a cache without either: c-ares with the
	// deprecated use_tcp_for_dns_lookups. Envoy takes it only when the
	// bootstrap has no typed_dns_resolver_config (Options.ServerUntyped);
	// otherwise the cache uses the bootstrap's resolver.
	Legacy dns.Spec
	// KeyValue is key_value_config's store, nil for none.
	KeyValue *filebased.Config
	// filter is resolved_address_filter, nil for none.
	filter *addressFilter
	// source is the configuration, to compare caches of one name.
	source *dfpcommonv3.DnsCacheConfig
}

// Preresolved is one preresolve_hostnames entry.
type Preresolved struct {
	Host string
	Port uint16
}

// Compile checks a DnsCacheConfig. Errors name the field path below it.
func Compile(c *dfpcommonv3.DnsCacheConfig, reg *extension.Registry) (*Config, []error) {
	cfg := &Config{
		Name:           c.GetName(),
		Family:         dns.FamilyFromCluster(c.GetDnsLookupFamily()),
		RefreshRate:    defaultRefreshRate,
		MinRefreshRate: defaultMinRefreshRate,
		HostTTL:        defaultHostTTL,
		QueryTimeout:   defaultQueryTimeout,
		MaxHosts:       defaultMaxHosts,
		MaxPending:     defaultMaxPending,
		source:         proto.Clone(c).(*dfpcommonv3.DnsCacheConfig),
	}
	var errs []error
	if cfg.Name == "" {
		errs = append(errs, fieldpath.Errorf("name", "required"))
	}
	positive := func(d *durationpb.Duration, path string, min time.Duration, dst *time.Duration) {
		if d == nil {
			return
		}
		if err := d.CheckValid(); err != nil || d.AsDuration() < min {
			errs = append(errs, fieldpath.Errorf(path, "must be at least %s", min))
			return
		}
		*dst = d.AsDuration().Truncate(time.Millisecond)
	}
	positive(c.GetDnsRefreshRate(), "dns_refresh_rate", time.Millisecond, &cfg.RefreshRate)
	positive(c.GetDnsMinRefreshRate(), "dns_min_refresh_rate", time.Second, &cfg.MinRefreshRate)
	positive(c.GetHostTtl(), "host_ttl", time.Millisecond, &cfg.HostTTL)
	positive(c.GetDnsQueryTimeout(), "dns_query_timeout", 0, &cfg.QueryTimeout)
	if m := c.GetMaxHosts(); m != nil {
		if m.GetValue() == 0 {
			errs = append(errs, fieldpath.Errorf("max_hosts.value", "must be greater than 0"))
		}
		cfg.MaxHosts = int(m.GetValue())
	}
	var ferrs []error
	cfg.Failure, ferrs = dns.FailureBackoff(c.GetDnsFailureRefreshRate(), "dns_failure_refresh_rate")
	errs = append(errs, ferrs...)
	cfg.NoRefreshOnFailure = c.GetDisableDnsRefreshOnFailure()
	if m := c.GetDnsCacheCircuitBreaker().GetMaxPendingRequests(); m != nil {
		cfg.MaxPending = int64(m.GetValue())
	}
	for i, sa := range c.GetPreresolveHostnames() {
		path := fmt.Sprintf("preresolve_hostnames[%d]", i)
		if sa.GetAddress() == "" {
			errs = append(errs, fieldpath.Errorf(path+".address", "required"))
		}
		if sa.GetPortValue() == 0 || sa.GetPortValue() > 65535 {
			errs = append(errs, fieldpath.Errorf(path+".port_value", "must be a port (1 to 65535)"))
		}
		cfg.Preresolve = append(cfg.Preresolve, Preresolved{Host: sa.GetAddress(), Port: uint16(sa.GetPortValue())})
	}
	if len(cfg.Preresolve) > cfg.MaxHosts {
		// Envoy's check, in its words.
		errs = append(errs, fieldpath.Errorf("preresolve_hostnames", "DNS Cache [%s] configured with preresolve_hostnames=%d larger than max_hosts=%d", cfg.Name, len(cfg.Preresolve), cfg.MaxHosts))
	}
	if tec := c.GetTypedDnsResolverConfig(); tec != nil {
		spec, rerrs := dns.FromTyped(tec, reg)
		for _, err := range rerrs {
			errs = append(errs, fieldpath.Under("typed_dns_resolver_config", err))
		}
		cfg.Resolver = spec
	} else if rc := c.GetDnsResolutionConfig(); rc != nil {
		spec, rerrs := dns.FromResolutionConfig(rc, "dns_resolution_config")
		errs = append(errs, rerrs...)
		cfg.Resolver = spec
	} else {
		cfg.Legacy = dns.CaresSpec(dns.CaresOptions{UseTCP: c.GetUseTcpForDnsLookups()})
	}
	if kv := c.GetKeyValueConfig(); kv != nil {
		var err error
		if cfg.KeyValue, err = compileKeyValue(kv, reg); err != nil {
			errs = append(errs, err)
		}
	}
	if f := c.GetResolvedAddressFilter(); f != nil {
		var ferrs []error
		cfg.filter, ferrs = compileAddressFilter(f)
		errs = append(errs, ferrs...)
	}
	return cfg, errs
}

// sameAs reports whether two configurations of one cache name are the same,
// as Envoy requires of every user of a cache.
func (c *Config) sameAs(o *Config) bool { return proto.Equal(c.source, o.source) }

// Key is the cache's key of host, Envoy's normalisation: host as given
// when it carries a port, else host:defaultPort (an IPv6 literal in
// brackets).
func Key(host string, defaultPort uint16) string {
	if host == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if host[0] == '[' {
		return host + ":" + strconv.Itoa(int(defaultPort))
	}
	return net.JoinHostPort(host, strconv.Itoa(int(defaultPort)))
}
