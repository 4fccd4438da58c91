package inject

import "fmt"

// bootstrapTemplate is the injected proxy's default configuration. The admin
// interface stays on loopback; the probe listener exposes exactly two of its
// read-only endpoints to the kubelet and Prometheus, with ordinary listener
// features: GET /ready and GET /stats/prometheus are routed to the static
// cluster "admin" (the admin interface itself), and every other request,
// including any other method on those paths, gets a 404 from the listener,
// so no mutation and no configuration dump can reach the admin through it.
// The node's id and cluster come from --service-node and --service-cluster.
const bootstrapTemplate = `admin:
  address:
    socket_address: { address: 127.0.0.1, port_value: %[1]d }
static_resources:
  listeners:
  - name: probe
    address:
      socket_address: { address: 0.0.0.0, port_value: %[2]d }
    filter_chains:
    - filters:
      - name: proxy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: probe
          codec_type: AUTO
          route_config:
            name: probe
            virtual_hosts:
            - name: probe
              domains: ["*"]
              routes:
              - match:
                  path: /ready
                  headers: [{ name: ":method", string_match: { exact: GET } }]
                route: { cluster: admin }
              - match:
                  path: /stats/prometheus
                  headers: [{ name: ":method", string_match: { exact: GET } }]
                route: { cluster: admin }
              - match: { prefix: "/" }
                direct_response: { status: 404, body: { inline_string: "not found\n" } }
          http_filters:
          - name: proxy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
%[3]s  clusters:
  - name: admin
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: admin
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: 127.0.0.1, port_value: %[1]d }
%[4]s`

// captureListeners are the listeners of transparent capture: the
// REDIRECT rules the capture init container installs send the pod's
// outbound connections to virtualOutbound and its inbound ones to
// virtualInbound, and both pass them on to where they were going (the
// original destination, which the ORIGINAL_DST clusters connect to).
// The third and fourth verbs take ipv6Address of each port, or nothing.
const captureListeners = `  - name: virtualOutbound
    address:
      socket_address: { address: 0.0.0.0, port_value: %[1]d }
%[3]s    use_original_dst: true
    filter_chains:
    - filters:
      - name: proxy.filters.network.tcp_proxy
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
          stat_prefix: PassthroughCluster
          cluster: PassthroughCluster
  - name: virtualInbound
    address:
      socket_address: { address: 0.0.0.0, port_value: %[2]d }
%[4]s    listener_filters:
    - name: envoy.filters.listener.original_dst
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst
    filter_chains:
    - filters:
      - name: proxy.filters.network.tcp_proxy
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
          stat_prefix: InboundPassthroughCluster
          cluster: InboundPassthroughCluster
`

// captureClusters are the clusters of transparent capture: each connects
// to the connection's original destination.
const captureClusters = `  - name: PassthroughCluster
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    connect_timeout: 10s
  - name: InboundPassthroughCluster
    type: ORIGINAL_DST
    lb_policy: CLUSTER_PROVIDED
    connect_timeout: 10s
`

// DefaultBootstrap is the bootstrap YAML (Envoy v3 API) of an injected
// proxy whose admin interface listens on 127.0.0.1:adminPort and whose probe
// listener listens on 0.0.0.0:probePort.
func DefaultBootstrap(adminPort, probePort int32) string {
	return fmt.Sprintf(bootstrapTemplate, adminPort, probePort, "", "")
}

// ipv6Address is a capture listener's additional address on [::]: the
// capture rules redirect a dual-stack pod's IPv6 connections to the same
// ports, and a listener on 0.0.0.0 takes only IPv4 ones.
const ipv6Address = `    additional_addresses:
    - address:
        socket_address: { address: "::", port_value: %d }
`

// CaptureBootstrap is the bootstrap of an injected proxy with transparent
// capture: DefaultBootstrap's admin and probe listener, plus the listeners
// virtualOutbound on 0.0.0.0:OutboundCapturePort and virtualInbound on
// 0.0.0.0:InboundCapturePort and their ORIGINAL_DST clusters. With ipv6
// the two listeners also listen on [::] (dual-stack pods: binding [::]
// fails where the kernel has no IPv6 at all, so it is a choice).
func CaptureBootstrap(adminPort, probePort int32, ipv6 bool) string {
	out, in := "", ""
	if ipv6 {
		out, in = fmt.Sprintf(ipv6Address, OutboundCapturePort), fmt.Sprintf(ipv6Address, InboundCapturePort)
	}
	return fmt.Sprintf(bootstrapTemplate, adminPort, probePort,
		fmt.Sprintf(captureListeners, OutboundCapturePort, InboundCapturePort, out, in), captureClusters)
}
