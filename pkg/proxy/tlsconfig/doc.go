// Package tlsconfig turns Envoy's TLS transport socket configuration
// (envoy.extensions.transport_sockets.tls.v3: CommonTlsContext and
// DownstreamTlsContext) into Go's crypto/tls configuration: certificates and
// keys from files or inline, protocol versions, cipher suites, ECDH
// curves and signature algorithms under Envoy's names and defaults (per
// certificate too, and under the FIPS_202205 compliance policy), the
// client's cipher preference, require_sni, ALPN, and the peer certificate
// validation Envoy's default validator does (trusted CA, subject alt name
// matchers, SPKI and certificate hash pins, expired certificates). It also
// keeps Envoy's ssl.* handshake stats.
//
// Everything it cannot honour is a configuration error naming the field
// path below the TLS context; nothing is silently ignored.
package tlsconfig

// Name is the TLS transport socket's extension name in the proxy.
// spelling (envoy.transport_sockets.tls is accepted too).
const Name = "proxy.transport_sockets.tls"

// DownstreamCategory is Envoy's extension category of the transport
// sockets of listeners' filter chains.
const DownstreamCategory = "envoy.transport_sockets.downstream"

// UpstreamCategory is Envoy's extension category of clusters' transport
// sockets.
const UpstreamCategory = "envoy.transport_sockets.upstream"
