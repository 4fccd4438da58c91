package server

import (
	"strings"
	"testing"
)

// TestRDSNeedsTheADSStream checks that a connection manager taking its
// routes from RDS over ADS, without an ADS stream, fails the listener with
// the field's path instead of warming forever.
func TestRDSNeedsTheADSStream(t *testing.T) {
	_, err := buildListenerServer(t, withListeners(`
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: l
          rds: {route_config_name: r, config_source: {ads: {}}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}`))
	want := "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.rds.config_source.ads: requires dynamic_resources.ads_config (the ADS stream it names)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v\nwant it to contain %s", err, want)
	}
}

// TestADSSourceOfAFailedStream checks that a config source naming an ADS
// stream whose ads_config did not load says so, instead of claiming that
// the bootstrap has no ads_config.
func TestADSSourceOfAFailedStream(t *testing.T) {
	_, err := buildListenerServer(t, `
dynamic_resources:
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    grpc_services: [{envoy_grpc: {cluster_name: nope}}]
  cds_config: {ads: {}, resource_api_version: V3}
`)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"dynamic_resources.ads_config.grpc_services[0]: envoy_grpc.cluster_name: unknown gRPC client cluster 'nope'",
		"dynamic_resources.cds_config.ads: the ADS stream of dynamic_resources.ads_config did not start (see that field's error)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v\nwant it to contain %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "requires dynamic_resources.ads_config") {
		t.Errorf("error = %v\nclaims there is no ads_config", err)
	}
}
