package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedUpstreamProxyProtocol lists the fields of the upstream PROXY
// protocol transport socket (envoy.transport_sockets.upstream_proxy_protocol,
// see pkg/proxy/upstreamproxyprotocol): the header's version, the TLVs
// it adds (a static value or a format string rendered per connection) or
// passes on (pass_through_tlvs, which the proxy_protocol listener filter's
// uses too), the transport socket it precedes, allow_unspecified_address
// (null addresses sent as AF_UNSPEC) and tlv_as_pool_key (connections
// shared only by users with the same TLVs). TlvEntry is tcp_proxy's
// proxy_protocol_tlvs' too; the format string's fields are the access
// log's.
var supportedUpstreamProxyProtocol = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport.config":                    {},
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport.transport_socket":          {},
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport.allow_unspecified_address": {},
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport.tlv_as_pool_key":           {},
	"envoy.config.core.v3.ProxyProtocolConfig.version":                                                              {},
	"envoy.config.core.v3.ProxyProtocolConfig.added_tlvs":                                                           {},
	"envoy.config.core.v3.ProxyProtocolConfig.pass_through_tlvs":                                                    {},
	"envoy.config.core.v3.ProxyProtocolPassThroughTLVs.match_type":                                                  {},
	"envoy.config.core.v3.ProxyProtocolPassThroughTLVs.tlv_type":                                                    {},
	"envoy.config.core.v3.TlvEntry.type":                                                                            {},
	"envoy.config.core.v3.TlvEntry.value":                                                                           {},
	"envoy.config.core.v3.TlvEntry.format_string":                                                                   {},
}
