package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedDNSFilter lists the fields of envoy.filters.udp.dns_filter that
// Outrigger implements (pkg/proxy/filters/udp/dnsfilter). Not listed, so
// refused with their path: access_log, and client_config's
// upstream_resolvers (a field of Envoy 1.19.0 and 1.19.1 that Envoy no
// longer reads). The table's known_suffixes is accepted as Envoy accepts
// it, deprecated and unused (the filter logs that it has no effect).
var supportedDNSFilter = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.stat_prefix":                                   {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.server_config":                                 {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.client_config":                                 {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.case_insensitive":                              {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.ServerContextConfig.inline_dns_table":          {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.ServerContextConfig.external_dns_table":        {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.ClientContextConfig.resolver_timeout":          {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.ClientContextConfig.dns_resolution_config":     {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.ClientContextConfig.typed_dns_resolver_config": {},
	"envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig.ClientContextConfig.max_pending_lookups":       {},
	"envoy.data.dns.v3.DnsTable.external_retry_count":                                                          {},
	"envoy.data.dns.v3.DnsTable.virtual_domains":                                                               {},
	"envoy.data.dns.v3.DnsTable.known_suffixes":                                                                {},
	"envoy.data.dns.v3.DnsTable.AddressList.address":                                                           {},
	"envoy.data.dns.v3.DnsTable.DnsServiceProtocol.number":                                                     {},
	"envoy.data.dns.v3.DnsTable.DnsServiceProtocol.name":                                                       {},
	"envoy.data.dns.v3.DnsTable.DnsServiceTarget.host_name":                                                    {},
	"envoy.data.dns.v3.DnsTable.DnsServiceTarget.cluster_name":                                                 {},
	"envoy.data.dns.v3.DnsTable.DnsServiceTarget.priority":                                                     {},
	"envoy.data.dns.v3.DnsTable.DnsServiceTarget.weight":                                                       {},
	"envoy.data.dns.v3.DnsTable.DnsServiceTarget.port":                                                         {},
	"envoy.data.dns.v3.DnsTable.DnsService.service_name":                                                       {},
	"envoy.data.dns.v3.DnsTable.DnsService.protocol":                                                           {},
	"envoy.data.dns.v3.DnsTable.DnsService.ttl":                                                                {},
	"envoy.data.dns.v3.DnsTable.DnsService.targets":                                                            {},
	"envoy.data.dns.v3.DnsTable.DnsServiceList.services":                                                       {},
	"envoy.data.dns.v3.DnsTable.DnsEndpoint.address_list":                                                      {},
	"envoy.data.dns.v3.DnsTable.DnsEndpoint.cluster_name":                                                      {},
	"envoy.data.dns.v3.DnsTable.DnsEndpoint.service_list":                                                      {},
	"envoy.data.dns.v3.DnsTable.DnsVirtualDomain.name":                                                         {},
	"envoy.data.dns.v3.DnsTable.DnsVirtualDomain.endpoint":                                                     {},
	"envoy.data.dns.v3.DnsTable.DnsVirtualDomain.answer_ttl":                                                   {},
}
