package bootstrap

import (
	"regexp"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// supportedHTTP11Proxy lists the fields of the cluster transport sockets
// tcp_stats (pkg/proxy/cluster/tcpstats.go) and http_11_proxy
// (envoy.transport_sockets.http_11_proxy,
// pkg/proxy/cluster/http11proxy.go): all of them, and the one typed
// metadata entry it reads, an endpoint's or its locality's proxy address.
// Other typed_filter_metadata stays refused: nothing would read it.
var supportedHTTP11Proxy = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport.transport_socket":      {},
	"envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport.default_proxy_address": {},
	// tcp_stats, on clusters (pkg/proxy/cluster/tcpstats.go).
	"envoy.extensions.transport_sockets.tcp_stats.v3.Config.transport_socket": {},
	"envoy.extensions.transport_sockets.tcp_stats.v3.Config.update_period":    {},
	"envoy.config.core.v3.Metadata.typed_filter_metadata": {
		types:     []protoreflect.FullName{"envoy.config.core.v3.Address"},
		only:      http11ProxyMetadataPaths,
		onlyWhere: `an endpoint's or locality's metadata, under "envoy.http11_proxy_transport_socket.proxy_address" (read by the http_11_proxy transport socket)`,
	},
}

// http11ProxyMetadataPaths are the typed metadata entries the
// http_11_proxy transport socket reads: an endpoint's (lb_endpoints) or
// its locality's (endpoints), in a cluster's load_assignment or an EDS
// resource.
var http11ProxyMetadataPaths = regexp.MustCompile(`(^|\.)endpoints\[\d+\](\.lb_endpoints\[\d+\])?\.metadata\.typed_filter_metadata\["envoy\.http11_proxy_transport_socket\.proxy_address"\]$`)
