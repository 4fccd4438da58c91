package bootstrap

import "testing"

func TestValidateLoadStatsConfig(t *testing.T) {
	const base = "cluster_manager.load_stats_config"
	runValidateCases(t, map[string]validateCase{
		"grpc": {
			overlay: `cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: lrs}, timeout: 1s}]}}`,
		},
		"delta grpc is the same stream": {
			overlay: `cluster_manager: {load_stats_config: {api_type: DELTA_GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: lrs}}]}}`,
		},
		"rest": {
			overlay: `cluster_manager: {load_stats_config: {api_type: REST, cluster_names: [lrs], refresh_delay: 1s}}`,
			want: []string{
				base + ".api_type: REST cannot carry load reports: GRPC is required (Envoy: ApiConfigSource type must be gRPC)",
				base + ".transport_api_version: must be V3 (Envoy refuses the AUTO and V2 transports)",
			},
		},
		"no transport version": {
			overlay: `cluster_manager: {load_stats_config: {api_type: GRPC, grpc_services: [{envoy_grpc: {cluster_name: lrs}}]}}`,
			want:    []string{base + ".transport_api_version: must be V3 (Envoy refuses the AUTO and V2 transports)"},
		},
		"no service": {
			overlay: `cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3}}`,
			want:    []string{base + ".grpc_services: one gRPC service is required"},
		},
		"no api type": {
			overlay: `cluster_manager: {load_stats_config: {transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: lrs}}]}}`,
			want:    []string{base + ".api_type: GRPC or DELTA_GRPC is required"},
		},
		"xds-only fields": {
			overlay: `cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: lrs}}], set_node_on_first_message_only: true, rate_limit_settings: {}, refresh_delay: 1s}}`,
			want: []string{
				base + ".refresh_delay: only REST config sources poll: a gRPC stream has no use for it",
				base + ".set_node_on_first_message_only: not supported by Outrigger: every load report carries the node (Envoy's load reporter ignores the field)",
				base + ".rate_limit_settings: not supported by Outrigger: load reports are paced by the server's load_reporting_interval (Envoy's load reporter ignores the field)",
			},
		},
		"google grpc": {
			overlay: `cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{google_grpc: {target_uri: "127.0.0.1:1", stat_prefix: lrs}}]}}`,
		},
		"aggregated": {
			overlay: `cluster_manager: {load_stats_config: {api_type: AGGREGATED_GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: lrs}}]}}`,
			want:    []string{base + ".api_type: AGGREGATED_GRPC is not supported by Outrigger (supported: GRPC, DELTA_GRPC, REST)"},
		},
	})
}
