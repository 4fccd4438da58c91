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
  clusters:
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
`

// DefaultBootstrap is the bootstrap YAML (Envoy v3 API) of an injected
// proxy whose admin interface listens on 127.0.0.1:adminPort and whose probe
// listener listens on 0.0.0.0:probePort.
func DefaultBootstrap(adminPort, probePort int32) string {
	return fmt.Sprintf(bootstrapTemplate, adminPort, probePort)
}
