package bootstrap

import "testing"

func TestValidateDynamicResources(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"lds from a path_config_source": {
			overlay: `dynamic_resources: {lds_config: {resource_api_version: V3, initial_fetch_timeout: 5s, path_config_source: {path: /etc/outrigger/lds.yaml, watched_directory: {path: /etc/outrigger}}}}`,
		},
		"lds from the deprecated path": {
			overlay: `dynamic_resources: {lds_config: {path: /etc/outrigger/lds.yaml}}`,
		},
		"resource_api_version AUTO": {
			overlay: `dynamic_resources: {lds_config: {resource_api_version: AUTO, path_config_source: {path: /etc/outrigger/lds.yaml}}}`,
		},
		"empty dynamic_resources": {
			overlay: `dynamic_resources: {}`,
		},
		"resource_api_version V2": {
			overlay: `dynamic_resources: {lds_config: {resource_api_version: V2, path_config_source: {path: /lds.yaml}}}`,
			want:    []string{"dynamic_resources.lds_config.resource_api_version: V2 is not supported by Outrigger (supported: AUTO, V3)"},
		},
		"no config source": {
			overlay: `dynamic_resources: {lds_config: {resource_api_version: V3}}`,
			want: []string{
				"dynamic_resources.lds_config.config_source_specifier: value is required",
				"dynamic_resources.lds_config: a path_config_source (or path), ads or api_config_source is required: Outrigger reads listeners from a file, a gRPC stream or REST only",
			},
		},
		"empty deprecated path": {
			overlay: `dynamic_resources: {lds_config: {path: ""}}`,
			want:    []string{"dynamic_resources.lds_config.path: must not be empty"},
		},
		"empty path_config_source path": {
			overlay: `dynamic_resources: {lds_config: {path_config_source: {path: "", watched_directory: {path: ""}}}}`,
			want: []string{
				"dynamic_resources.lds_config.path_config_source.path: value length must be at least 1 runes",
				"dynamic_resources.lds_config.path_config_source.watched_directory.path: value length must be at least 1 runes",
			},
		},
		"lds over ads": {
			overlay: `dynamic_resources: {ads_config: {api_type: GRPC, transport_api_version: V3, set_node_on_first_message_only: true, grpc_services: [{envoy_grpc: {cluster_name: xds}, timeout: 1s}]}, lds_config: {ads: {}, resource_api_version: V3, initial_fetch_timeout: 2s}}`,
		},
		"ads source without ads_config": {
			overlay: `dynamic_resources: {lds_config: {ads: {}}}`,
			want:    []string{"dynamic_resources.lds_config.ads: requires dynamic_resources.ads_config (the ADS stream it names)"},
		},
		"ads_config refusals": {
			overlay: `dynamic_resources: {ads_config: {api_type: AGGREGATED_DELTA_GRPC, grpc_services: [{google_grpc: {target_uri: "x:1", stat_prefix: x}}, {envoy_grpc: {cluster_name: xds}}], rate_limit_settings: {}, refresh_delay: 1s}}`,
			want: []string{
				"dynamic_resources.ads_config.api_type: AGGREGATED_DELTA_GRPC is not supported by Outrigger (supported: GRPC, DELTA_GRPC, REST)",
				"dynamic_resources.ads_config.transport_api_version: must be V3 (Envoy refuses the AUTO and V2 transports)",
				"dynamic_resources.ads_config.grpc_services: only one gRPC service is supported (Envoy: only singleton gRPC service lists supported)",
				"dynamic_resources.ads_config.grpc_services[0]: an envoy_grpc service naming a static cluster is required: google_grpc is not supported for xDS by Outrigger",
				"dynamic_resources.ads_config.refresh_delay: only REST config sources poll: a gRPC stream has no use for it",
			},
		},
		"ads_config without api_type": {
			overlay: `dynamic_resources: {ads_config: {transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}]}}`,
			want:    []string{"dynamic_resources.ads_config.api_type: GRPC or DELTA_GRPC is required"},
		},
		"an EDS cluster over ads": {
			overlay: `{static_resources: {clusters: [{name: backend, type: EDS, connect_timeout: 1s, eds_cluster_config: {service_name: backend-svc, eds_config: {ads: {}, resource_api_version: V3, initial_fetch_timeout: 1s}}}]}, ` +
				`dynamic_resources: {ads_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}]}}}`,
		},
		"an EDS cluster over a stream of its own": {
			overlay: `{static_resources: {clusters: [{name: backend, type: EDS, connect_timeout: 1s, eds_cluster_config: {eds_config: {api_config_source: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}]}}}}]}}`,
		},
		"an EDS cluster over a REST source": {
			overlay: `{static_resources: {clusters: [{name: backend, type: EDS, connect_timeout: 1s, eds_cluster_config: {eds_config: {api_config_source: {api_type: REST, transport_api_version: V3, cluster_names: [xds], refresh_delay: 2s, request_timeout: 3s}}}}]}}`,
		},
		"REST on the ADS stream": {
			overlay: `dynamic_resources: {ads_config: {api_type: REST, transport_api_version: V3, cluster_names: [xds], refresh_delay: 1s}}`,
			want:    []string{"dynamic_resources.ads_config.api_type: REST cannot carry the aggregated stream: GRPC or DELTA_GRPC is required"},
		},
		"gRPC source with REST fields": {
			overlay: `dynamic_resources: {cds_config: {api_config_source: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}], cluster_names: [xds], request_timeout: 1s}}}`,
			want: []string{
				"dynamic_resources.cds_config.api_config_source.cluster_names: a gRPC config source must not have a cluster name specified (its gRPC service names the cluster)",
				"dynamic_resources.cds_config.api_config_source.request_timeout: only REST config sources send requests that time out: a gRPC stream has no use for it",
			},
		},
		"EDS cluster refusals": {
			overlay: `{static_resources: {clusters: [` +
				`{name: none, type: EDS}, ` +
				`{name: file, type: EDS, eds_cluster_config: {eds_config: {path_config_source: {path: /eds.yaml}}}}, ` +
				`{name: noads, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}, ` +
				`{name: static, type: STATIC, eds_cluster_config: {service_name: x}}]}}`,
			want: []string{
				"static_resources.clusters[0].eds_cluster_config.eds_config: required: where the cluster's endpoints come from (ads: {})",
				"static_resources.clusters[1].eds_cluster_config.eds_config: ads: {} or api_config_source is required: Outrigger takes endpoints from a gRPC stream or REST only",
				"static_resources.clusters[2].eds_cluster_config.eds_config.ads: requires dynamic_resources.ads_config (the ADS stream it names)",
				"static_resources.clusters[3].eds_cluster_config: only a cluster of type EDS has one",
			},
		},
		"the ADS cluster cannot be an EDS cluster": {
			overlay: `{static_resources: {clusters: [{name: xds, type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}]}, ` +
				`dynamic_resources: {ads_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}]}}}`,
			want: []string{`static_resources.clusters[0].type: the ADS stream's cluster "xds" cannot take its endpoints from that stream: give it STATIC or DNS endpoints`},
		},
		"cds over ads needs the ads stream": {
			overlay: `dynamic_resources: {cds_config: {ads: {}}}`,
			want:    []string{"dynamic_resources.cds_config.ads: requires dynamic_resources.ads_config (the ADS stream it names)"},
		},
		"cds and lds over gRPC sources of their own": {
			overlay: `dynamic_resources: {cds_config: {api_config_source: {api_type: DELTA_GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: xds}}], rate_limit_settings: {max_tokens: 5, fill_rate: 0.5}}, initial_fetch_timeout: 1s}, ` +
				`lds_config: {api_config_source: {api_type: GRPC, transport_api_version: V3, set_node_on_first_message_only: true, grpc_services: [{envoy_grpc: {cluster_name: xds}}]}}}`,
		},
		"rest source refusals": {
			overlay: `dynamic_resources: {lds_config: {api_config_source: {api_type: REST, grpc_services: [{envoy_grpc: {cluster_name: xds}}], rate_limit_settings: {fill_rate: 0}, set_node_on_first_message_only: true, refresh_delay: 0s}}}`,
			want: []string{
				"dynamic_resources.lds_config.api_config_source.rate_limit_settings.fill_rate: value must be greater than 0",
				"dynamic_resources.lds_config.api_config_source.transport_api_version: must be V3 (Envoy refuses the AUTO and V2 transports)",
				"dynamic_resources.lds_config.api_config_source.grpc_services: a config source that is not of a gRPC type must not have a gRPC service specified",
				"dynamic_resources.lds_config.api_config_source.cluster_names: must have a singleton cluster name specified",
				"dynamic_resources.lds_config.api_config_source.refresh_delay: must be above 0s",
				"dynamic_resources.lds_config.api_config_source.set_node_on_first_message_only: gRPC streams only: every REST request carries the node",
				"dynamic_resources.lds_config.api_config_source.rate_limit_settings: gRPC streams only: REST requests are paced by refresh_delay",
			},
		},
		"rest source without refresh_delay": {
			overlay: `dynamic_resources: {lds_config: {api_config_source: {api_type: REST, transport_api_version: V3, cluster_names: [a, b]}}}`,
			want: []string{
				"dynamic_resources.lds_config.api_config_source.cluster_names: must have a singleton cluster name specified",
				"dynamic_resources.lds_config.api_config_source.refresh_delay: required for REST API configuration sources",
			},
		},
		"polled file": {
			overlay: `dynamic_resources: {lds_config: {path_config_source: {path: /lds.yaml, poll_interval: 1s}}}`,
			want:    []string{"dynamic_resources.lds_config.path_config_source.poll_interval: not supported by Outrigger"},
		},
		"other discovery services": {
			overlay: `dynamic_resources: {cds_config: {resource_api_version: V3}, ads_config: {api_type: GRPC}, lds_resources_locator: "xdstp://x/envoy.config.listener.v3.Listener/*"}`,
			want: []string{
				"dynamic_resources.cds_config.config_source_specifier: value is required",
				"dynamic_resources.lds_resources_locator: not supported by Outrigger",
				"dynamic_resources.ads_config.transport_api_version: must be V3 (Envoy refuses the AUTO and V2 transports)",
				"dynamic_resources.ads_config.grpc_services: one gRPC service is required",
				"dynamic_resources.cds_config: a path_config_source (or path), ads or api_config_source is required: Outrigger reads clusters from a file, a gRPC stream or REST only",
			},
		},
	})
}
