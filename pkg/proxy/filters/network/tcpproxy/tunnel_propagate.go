package tcpproxy

// The filter state keys of propagate_response_headers and
// propagate_response_trailers, Envoy's.
const (
	responseHeadersKey  = "envoy.tcp_proxy.propagate_response_headers"
	responseTrailersKey = "envoy.tcp_proxy.propagate_response_trailers"
)
