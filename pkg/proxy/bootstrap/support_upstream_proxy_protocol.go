package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedUpstreamProxyProtocol lists the fields of the upstream PROXY
// protocol transport socket (envoy.transport_sockets.upstream_proxy_protocol,
// see pkg/proxy/upstreamproxyprotocol): the header's version, the TLVs
// it adds or passes on (pass_through_tlvs, which the proxy_protocol
// listener filter's uses too) and the transport socket it precedes.
// allow_unspecified_address, tlv_as_pool_key and added_tlvs' format_string
// are not implemented.
var supportedUpstreamProxyProtocol = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport.config":           {},
	"envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport.transport_socket": {},
	"envoy.config.core.v3.ProxyProtocolConfig.version":                                                     {},
	"envoy.config.core.v3.ProxyProtocolConfig.added_tlvs":                                                  {},
	"envoy.config.core.v3.ProxyProtocolConfig.pass_through_tlvs":                                           {},
	"envoy.config.core.v3.ProxyProtocolPassThroughTLVs.match_type":                                         {},
	"envoy.config.core.v3.ProxyProtocolPassThroughTLVs.tlv_type":                                           {},
	"envoy.config.core.v3.TlvEntry.type":                                                                   {},
	"envoy.config.core.v3.TlvEntry.value":                                                                  {},
}
