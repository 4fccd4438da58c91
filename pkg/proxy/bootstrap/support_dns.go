package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedDNS lists the DNS resolver fields Outrigger implements, at the
// bootstrap (the server's resolver) and in a DNS cluster's resolver
// configuration (see supportedCore).
var supportedDNS = map[protoreflect.FullName]fieldSupport{
	// The server's resolver. use_tcp_for_dns_lookups and
	// dns_resolution_config are deprecated in favour of
	// typed_dns_resolver_config; Envoy still reads them.
	"envoy.config.bootstrap.v3.Bootstrap.typed_dns_resolver_config": {},
	"envoy.config.bootstrap.v3.Bootstrap.dns_resolution_config":     {},
	"envoy.config.bootstrap.v3.Bootstrap.use_tcp_for_dns_lookups":   {},

	// typed_dns_resolver_config. TypedExtensionConfig is Envoy's generic
	// extension slot; DNS resolvers are the only extensions Outrigger takes
	// through it so far. The next extension point that uses it needs the
	// category to depend on the parent field.
	"envoy.config.core.v3.TypedExtensionConfig.name":         {},
	"envoy.config.core.v3.TypedExtensionConfig.typed_config": {category: "envoy.network.dns_resolver", categories: []string{"envoy.load_balancing_policies", "envoy.regex_engines", "envoy.compression.compressor", "envoy.compression.decompressor", "envoy.formatter", "envoy.tracers.opentelemetry.resource_detectors", "envoy.tracers.opentelemetry.samplers", "envoy.filters.http", "envoy.rate_limit_descriptors", "envoy.router.cluster_specifier_plugin", "envoy.http.original_ip_detection", "envoy.internal_redirect_predicates", "envoy.rbac.principals", "envoy.rbac.matchers", "envoy.health_check.event_sinks", "envoy.path.match", "envoy.path.rewrite", "envoy.http.stateful_header_formatters", "envoy.route.early_data_policy", "envoy.tls.cert_validator", "envoy.http.stateful_session", "envoy.http.injected_credentials", "envoy.common.key_value"}},

	// The deprecated DnsResolutionConfig (the c-ares resolver's fields).
	"envoy.config.core.v3.DnsResolutionConfig.resolvers":               {},
	"envoy.config.core.v3.DnsResolutionConfig.dns_resolver_options":    {},
	"envoy.config.core.v3.DnsResolverOptions.use_tcp_for_dns_lookups":  {},
	"envoy.config.core.v3.DnsResolverOptions.no_default_search_domain": {},

	// envoy.network.dns_resolver.cares. udp_max_queries,
	// max_udp_channel_duration and reinit_channel_on_timeout bound how
	// long c-ares reuses a socket: every query attempt here has its own.
	// qcache_max_ttl is accepted at 0 only (no query cache).
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.resolvers":                  {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.use_resolvers_as_fallback":  {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.filter_unroutable_families": {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.dns_resolver_options":       {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.udp_max_queries":            {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.query_timeout_seconds":      {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.query_tries":                {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.rotate_nameservers":         {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.edns0_max_payload_size":     {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.max_udp_channel_duration":   {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.reinit_channel_on_timeout":  {},
	"envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig.qcache_max_ttl":             {},

	// envoy.network.dns_resolver.getaddrinfo.
	"envoy.extensions.network.dns_resolver.getaddrinfo.v3.GetAddrInfoDnsResolverConfig.num_retries":          {},
	"envoy.extensions.network.dns_resolver.getaddrinfo.v3.GetAddrInfoDnsResolverConfig.num_resolver_threads": {},
}
