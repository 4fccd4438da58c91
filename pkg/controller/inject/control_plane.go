package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
)

// ControlPlaneCluster is the static cluster through which an injected
// proxy reaches its control plane.
const ControlPlaneCluster = "xds_cluster"

// ControlPlane is the management server injected proxies join: their
// built-in bootstrap gets a static cluster to it and an ADS stream that
// carries their clusters (CDS) and listeners (LDS), and with them the
// endpoints, routes and secrets those name over ADS.
type ControlPlane struct {
	// Address is the management server's host name (a Service's DNS
	// name, resolved as STRICT_DNS) or IP address.
	Address string
	// Port is its gRPC port.
	Port int32
	// Delta speaks the incremental protocol (api_type DELTA_GRPC) rather
	// than the state of the world (GRPC).
	Delta bool
	// CABundle, when set, makes the connection TLS, the server's
	// certificate verified against these PEM certificates.
	CABundle string
	// SNI is the server name sent and verified over TLS; Address when
	// empty.
	SNI string
}

// Validate checks the fields, naming them.
func (cp ControlPlane) Validate() error {
	var errs []error
	if strings.TrimSpace(cp.Address) == "" || strings.ContainsAny(cp.Address, " \t\r\n/") {
		errs = append(errs, fmt.Errorf("address: %q is not a host name or IP address", cp.Address))
	}
	if cp.Port < 1 || cp.Port > 65535 {
		errs = append(errs, fmt.Errorf("port: %d is not a port number (1-65535)", cp.Port))
	}
	if cp.SNI != "" && cp.CABundle == "" {
		errs = append(errs, errors.New("sni: only used with TLS (a CA bundle)"))
	}
	if cp.CABundle != "" && !strings.Contains(cp.CABundle, "-----BEGIN CERTIFICATE-----") {
		errs = append(errs, errors.New("CA bundle: no PEM certificate in it"))
	}
	return errors.Join(errs...)
}

// controlPlaneCluster is the cluster item (in a static_resources.clusters
// list): HTTP/2 (gRPC) to the address, TLS when there is a CA bundle.
// %[1]s is the address, %[2]d the port, %[3]s the transport socket.
const controlPlaneCluster = `  - name: ` + ControlPlaneCluster + `
    type: STRICT_DNS
    connect_timeout: 5s
    load_assignment:
      cluster_name: ` + ControlPlaneCluster + `
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: { address: %[1]s, port_value: %[2]d }
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: { http2_protocol_options: {} }
%[3]s`

// controlPlaneTLS is the cluster's transport socket: %[1]s is the SNI,
// %[2]s the CA bundle (both as quoted scalars), %[3]s the type of the
// subject alternative name the certificate must have the SNI as.
const controlPlaneTLS = `    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
        sni: %[1]s
        common_tls_context:
          alpn_protocols: [h2]
          validation_context:
            trusted_ca: { inline_string: %[2]s }
            match_typed_subject_alt_names:
            - san_type: %[3]s
              matcher: { exact: %[1]s }
`

// controlPlaneDynamic is the dynamic_resources block: %[1]s is the
// api_type.
const controlPlaneDynamic = `dynamic_resources:
  ads_config:
    api_type: %[1]s
    transport_api_version: V3
    set_node_on_first_message_only: true
    grpc_services:
    - envoy_grpc: { cluster_name: ` + ControlPlaneCluster + ` }
  cds_config: { ads: {}, resource_api_version: V3 }
  lds_config: { ads: {}, resource_api_version: V3 }
`

// join adds the control plane to a built-in bootstrap, whose text ends
// with its static clusters: the control plane's cluster after them, then
// dynamic_resources.
func (cp ControlPlane) join(bootstrap string) string {
	ts := ""
	if cp.CABundle != "" {
		sni := cp.SNI
		if sni == "" {
			sni = cp.Address
		}
		san := "DNS"
		if net.ParseIP(sni) != nil {
			san = "IP_ADDRESS"
		}
		ts = fmt.Sprintf(controlPlaneTLS, quote(sni), quote(cp.CABundle), san)
	}
	apiType := "GRPC"
	if cp.Delta {
		apiType = "DELTA_GRPC"
	}
	return bootstrap + fmt.Sprintf(controlPlaneCluster, quote(cp.Address), cp.Port, ts) + fmt.Sprintf(controlPlaneDynamic, apiType)
}

// quote is s as a YAML double-quoted scalar: a JSON string is one, with
// any character escaped as YAML reads it.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
