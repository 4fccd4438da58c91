package bootstrap

import (
	"errors"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// Linked in for the tests only: real Envoy extensions that go-control-plane
	// ships but Outrigger does not implement.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/fluentd/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/mongo_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
)

// Pieces of YAML for the validation cases. Each case is merged over
// testdata/full.yaml (which is valid), so repeated fields append: an extra
// listener is static_resources.listeners[1], an extra access log
// admin.access_log[1], an extra runtime layer layered_runtime.layers[3].
const (
	routerFilter = `{name: router, typed_config: {"@type": ` + routerURL + `}}`
	okRoute      = `{match: {prefix: /}, direct_response: {status: 200}}`
	okRouteCfg   = `route_config: {virtual_hosts: [{name: v, domains: [extra.example], routes: [` + okRoute + `]}]}`
	// extraHCM is the path of the extra listener's HCM configuration.
	extraHCM = "static_resources.listeners[1].filter_chains[0].filters[0].typed_config"
)

// listenerYAML is an extra listener on a free port with the given network
// filters.
func listenerYAML(fields, filters string) string {
	return `static_resources: {listeners: [{name: extra, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, ` +
		fields + ` filter_chains: [{filters: [` + filters + `]}]}]}`
}

// hcmYAML is an extra listener whose HCM has the given fields.
func hcmYAML(fields string) string {
	return listenerYAML("", `{name: hcm, typed_config: {"@type": `+hcmURL+`, `+fields+`}}`)
}

// okHCM completes HCM fields into a valid configuration.
func okHCM(extra string) string {
	return hcmYAML(`stat_prefix: extra, ` + okRouteCfg + `, http_filters: [` + routerFilter + `]` + extra)
}

// accessLogYAML is an extra admin access log with the given typed_config.
func accessLogYAML(typedConfig string) string {
	return `admin: {access_log: [{name: extra, typed_config: ` + typedConfig + `}]}`
}

type validateCase struct {
	// overlay is merged over full.yaml; with standalone it is the whole
	// configuration.
	overlay    string
	standalone bool
	disable    []string
	want       []string
}

// runValidateCases loads and validates each case and compares every error
// line, in order.
func runValidateCases(t *testing.T, tests map[string]validateCase) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := LoadOptions{ConfigPath: "testdata/full.yaml", ConfigYAML: tc.overlay}
			if tc.standalone {
				opts.ConfigPath = ""
			}
			l, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			ext := builtin.Registry()
			if _, err := ext.Disable(tc.disable); err != nil {
				t.Fatal(err)
			}
			err = Validate(l.Bootstrap, ext)
			if diff := cmp.Diff(tc.want, errorLines(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			for _, fe := range fieldErrors(t, err) {
				if fe.Path == "" {
					t.Errorf("error %q has no path", fe)
				}
			}
		})
	}
}

func TestValidateValid(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"full.yaml":            {},
		"an extra listener":    {overlay: okHCM("")},
		"empty configuration":  {overlay: "{}", standalone: true},
		"port 0 may be reused": {overlay: strings.Replace(okHCM(""), "listeners: [{name: extra,", "listeners: [{name: extra0, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, filter_chains: [{filters: [{name: hcm, typed_config: {\"@type\": "+hcmURL+", stat_prefix: x, "+okRouteCfg+", http_filters: ["+routerFilter+"]}}]}]}, {name: extra,", 1)},
		"codec http2":          {overlay: okHCM(", codec_type: HTTP2")},
		"explicit tcp":         {overlay: "admin: {address: {socket_address: {protocol: TCP}}}"},
		"merged typed_config":  {overlay: accessLogYAML(`{"@type": ` + fileURL + `, path: /tmp/x}`)},
	})
}

func TestValidateSupport(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"bootstrap field": {
			// hds_config also breaks constraints inside; only the
			// unsupported field itself is reported.
			overlay: "hds_config: {api_type: GRPC}",
			want:    []string{"hds_config: not supported by Outrigger"},
		},
		"cluster field": {
			overlay: "static_resources: {clusters: [{name: backend, connection_pool_per_downstream_connection: true}]}",
			want: []string{"static_resources.clusters[0].connection_pool_per_downstream_connection: not supported by Outrigger: " +
				"Envoy then makes a connection pool for each downstream connection and closes it with that connection; " +
				"Outrigger's HTTP/1.1 pools are one per host and its HTTP/2 connections Go's transport's"},
		},
		"outlier detection nonsense": {
			overlay: "static_resources: {clusters: [{name: backend, outlier_detection: {max_ejection_percent: 101, enforcing_success_rate: 200, interval: 0s}}]}",
			want: []string{
				"static_resources.clusters[0].outlier_detection.interval: value must be greater than 0s",
				"static_resources.clusters[0].outlier_detection.max_ejection_percent: value must be less than or equal to 100",
				"static_resources.clusters[0].outlier_detection.enforcing_success_rate: value must be less than or equal to 100",
			},
		},
		"outlier detection monitors": {
			overlay: `static_resources: {clusters: [{name: backend, outlier_detection: {monitors: [{name: m, typed_config: {"@type": type.googleapis.com/google.protobuf.Struct, value: {}}}]}}]}`,
			want:    []string{"static_resources.clusters[0].outlier_detection.monitors: not supported by Outrigger"},
		},
		"cluster manager": {
			overlay: "cluster_manager: {local_cluster_name: backend, enable_deferred_cluster_creation: true, outlier_detection: {event_log_path: /tmp/x}, upstream_bind_config: {source_address: {address: 127.0.0.1, port_value: 0}}, load_stats_config: {api_type: GRPC, transport_api_version: V3, grpc_services: [{envoy_grpc: {cluster_name: backend}}]}}",
		},
		"load balancers": {
			// Envoy takes the first policy it has: an unknown one before
			// it is skipped, and only the chosen one's fields are checked.
			overlay: `static_resources: {clusters: [
  {name: a, lb_policy: MAGLEV, common_lb_config: {consistent_hashing_lb_config: {use_hostname_for_hashing: true, hash_balance_factor: 150}}},
  {name: b, load_balancing_policy: {policies: [
    {typed_extension_config: {name: unknown, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}},
    {typed_extension_config: {name: envoy.load_balancing_policies.ring_hash, typed_config: {"@type": type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash, locality_weighted_lb_config: {}}}},
    {typed_extension_config: {name: never.read, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}]}}]}`,
			// Every field of the chosen ring hash is supported (its
			// locality_weighted_lb_config too): no error.
			want: nil,
		},
		"cluster protocol options": {
			overlay: `static_resources: {clusters: [{name: backend, typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, auto_config: {http3_protocol_options: {}}}}}]}`,
			want:    []string{`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].auto_config.http3_protocol_options: not supported by Outrigger`},
		},
		"node context parameters": {
			overlay: "node_context_params: [cluster]",
			want:    []string{"node_context_params: not implemented by Envoy either (not yet implemented there), so not supported by Outrigger"},
		},
		"header_prefix": {
			overlay: "header_prefix: x-custom",
			want:    []string{"header_prefix: not supported by Outrigger"},
		},
		"udp": {
			overlay: "admin: {address: {socket_address: {protocol: UDP}}}",
			want:    []string{"admin.address.socket_address.protocol: UDP is not supported by Outrigger (supported: TCP)"},
		},
		"udp in a statsd sink": {
			overlay: `stats_sinks: [{name: envoy.stat_sinks.statsd, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink, address: {socket_address: {protocol: UDP, address: 127.0.0.1, port_value: 8125}}}}]`,
		},
		"socket address field": {
			overlay: "admin: {address: {socket_address: {resolver_name: custom}}}",
			want:    []string{"admin.address.socket_address.resolver_name: not supported by Outrigger"},
		},
		"access log format from an environment variable": {
			overlay: accessLogYAML(`{"@type": ` + fileURL + `, path: /tmp/x, log_format: {text_format_source: {environment_variable: X}}}`),
		},
		"admin access log with a format": {
			overlay: accessLogYAML(`{"@type": ` + fileURL + `, path: /tmp/x, format: "%PROTOCOL%\n"}`),
		},
		"access log filter": {
			overlay: `admin: {access_log: [{name: f, filter: {not_health_check_filter: {}}, typed_config: {"@type": ` + fileURL + `, path: /x}}]}`,
		},
		"access log CEL filter": {
			overlay: `admin: {access_log: [{name: f, filter: {extension_filter: {name: cel, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter, expression: "response.code >= 400", cel_config: {enable_string_conversion: true}}}}, typed_config: {"@type": ` + fileURL + `, path: /x}}]}`,
		},
		"access log extension filter of another category": {
			overlay: `admin: {access_log: [{name: f, filter: {extension_filter: {name: x, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}}, typed_config: {"@type": ` + fileURL + `, path: /x}}]}`,
			want:    []string{`admin.access_log[1].filter.extension_filter.typed_config: extension "proxy.filters.http.router" (category envoy.filters.http) cannot be used here: expected category envoy.access_loggers.extension_filters`},
		},
		"stdout access logger": {
			overlay: accessLogYAML(`{"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}`),
		},
		"open telemetry access logger": {
			overlay: accessLogYAML(`{"@type": type.googleapis.com/envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig,
				common_config: {log_name: a, transport_api_version: V3, grpc_service: {envoy_grpc: {cluster_name: d}}, buffer_size_bytes: 10, buffer_flush_interval: 1s},
				grpc_service: {envoy_grpc: {cluster_name: c}}, log_name: b, disable_builtin_labels: true, stat_prefix: p,
				body: {kvlist_value: {values: [{key: k, value: {array_value: {values: [{string_value: "%PROTOCOL%"}]}}}]}},
				attributes: {values: [{key: a, value: {string_value: x}}]},
				resource_attributes: {values: [{key: r, value: {int_value: 3}}, {key: s, value: {bool_value: true}}]},
				filter_state_objects_to_log: [k], custom_tags: [{tag: u, request_header: {name: x}}]}`),
		},
		"open telemetry access logger custom tag value": {
			overlay: accessLogYAML(`{"@type": type.googleapis.com/envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig,
				grpc_service: {envoy_grpc: {cluster_name: c}}, custom_tags: [{tag: u, value: "%PROTOCOL%"}]}`),
		},
		"unsupported access logger": {
			overlay: accessLogYAML(`{"@type": type.googleapis.com/envoy.extensions.access_loggers.fluentd.v3.FluentdAccessLogConfig}`),
			want:    []string{`admin.access_log[1].typed_config: extension "envoy.extensions.access_loggers.fluentd.v3.FluentdAccessLogConfig" is not supported by Outrigger (envoy.access_loggers.fluentd: not yet); see docs/extensions.md`},
		},
		"rtds layer": {
			overlay: "layered_runtime: {layers: [{name: rtds, rtds_layer: {name: r, rtds_config: {ads: {}}}}]}",
		},
		"pipe admin address": {
			overlay: "admin: {address: {pipe: {path: /tmp/admin.sock, mode: 0600}}}",
		},
		"pipe listener address": {
			overlay: `static_resources: {listeners: [{name: extra, address: {pipe: {path: /tmp/l.sock}}, filter_chains: [{filters: [{name: hcm, typed_config: {"@type": ` + hcmURL + `, stat_prefix: x, ` + okRouteCfg + `, http_filters: [` + routerFilter + `]}}]}]}]}`,
			want:    []string{"static_resources.listeners[1].address.pipe: not supported by Outrigger here (only in admin.address and STATIC clusters' load_assignment endpoints)"},
		},
		"google_re2 regex engine": {
			overlay: `default_regex_engine: {name: envoy.regex_engines.google_re2, typed_config: {"@type": type.googleapis.com/envoy.extensions.regex_engines.v3.GoogleRE2}}`,
		},
		"listener field": {
			overlay: listenerYAML("max_connections_to_accept_per_socket_event: 1,", `{name: hcm, typed_config: {"@type": `+hcmURL+`, stat_prefix: x, `+okRouteCfg+`, http_filters: [`+routerFilter+`]}}`),
			want:    []string{"static_resources.listeners[1].max_connections_to_accept_per_socket_event: not supported by Outrigger"},
		},
		"filter chain match": {
			overlay: strings.Replace(okHCM(""), "filter_chains: [{", "filter_chains: [{filter_chain_match: {destination_port: 80, server_names: [a.example], suffix_len: 1}, ", 1),
			want:    []string{"static_resources.listeners[1].filter_chains[0].filter_chain_match.suffix_len: not supported by Outrigger"},
		},
		"tls secret kind not implemented": {
			overlay: `static_resources: {secrets: [{name: k, tls_certificate: {signed_certificate_timestamp: [{inline_string: x}]}}]}`,
			want:    []string{"static_resources.secrets[0].tls_certificate.signed_certificate_timestamp: not supported by Outrigger"},
		},
		"upstream tls": {
			overlay: `static_resources: {clusters: [{name: up, type: STATIC, transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, sni: x, enforce_rsa_key_usage: true, common_tls_context: {tls_params: {compliance_policies: [FIPS_202205]}, custom_handshaker: {name: h}}}}}]}`,
			want:    []string{"static_resources.clusters[0].transport_socket.typed_config.common_tls_context.custom_handshaker: not supported by Outrigger"},
		},
		"tls certificate providers": {
			overlay: `static_resources: {clusters: [{name: up, type: STATIC, transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext, common_tls_context: {tls_certificate_provider_instance: {instance_name: x}}}}}]}`,
			want: []string{"static_resources.clusters[0].transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance: not implemented by Envoy either " +
				"(its API marks the certificate provider fields not implemented and publishes no certificate provider extension): " +
				"give certificates in tls_certificates, or through SDS (tls_certificate_sds_secret_configs, validation_context_sds_secret_config), " +
				"whose files rotate with watched_directory"},
		},
		"unsupported network filter": {
			overlay: listenerYAML("", `{name: mongo, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.mongo_proxy.v3.MongoProxy, stat_prefix: m}}`),
			want:    []string{`static_resources.listeners[1].filter_chains[0].filters[0].typed_config: extension "envoy.extensions.filters.network.mongo_proxy.v3.MongoProxy" is not supported by Outrigger (envoy.filters.network.mongo_proxy: a protocol proxy Outrigger does not carry); see docs/extensions.md`},
		},
		"rbac fields not implemented": {
			overlay: listenerYAML("", `{name: rbac, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC, stat_prefix: r, rules: {policies: {p: {permissions: [{matcher: {name: t, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}}], principals: [{filter_state: {key: k, string_match: {exact: v}}}], cel_config: {}}}, audit_logging_options: {}}}}`),
			want: []string{
				`static_resources.listeners[1].filter_chains[0].filters[0].typed_config.rules.policies["p"].permissions[0].matcher.typed_config: extension "google.protobuf.Empty" is not supported by Outrigger; see docs/extensions.md`,
				`static_resources.listeners[1].filter_chains[0].filters[0].typed_config.rules.audit_logging_options: not implemented by Envoy either (not yet implemented there), so not supported by Outrigger: Envoy's RBAC filters never call an audit logger; the audit loggers (envoy.rbac.audit_loggers.stream, a JSON line on stdout per decision) are gRPC's`,
			},
		},
		"tcp_proxy fields not implemented": {
			overlay: listenerYAML("", `{name: tcp, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: backend, max_early_data_bytes: 1024, on_demand: {resources_locator: "xdstp://x"}, upstream_connect_mode: ON_DOWNSTREAM_DATA}}`),
			want: []string{
				`static_resources.listeners[1].filter_chains[0].filters[0].typed_config.on_demand.resources_locator: not supported by Outrigger`,
			},
		},
		"tcp_proxy not last": {
			overlay: listenerYAML("", `{name: tcp, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: backend}}, {name: tcp2, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: backend}}`),
			want:    []string{`static_resources.listeners[1].filter_chains[0].filters[0]: proxy.filters.network.tcp_proxy is a terminal filter and must be the last in the filter chain`},
		},
		"network filter of the wrong category": {
			overlay: listenerYAML("", routerFilter),
			want:    []string{`static_resources.listeners[1].filter_chains[0].filters[0].typed_config: extension "proxy.filters.http.router" (category envoy.filters.http) cannot be used here: expected category envoy.filters.network`},
		},
		"filter config discovery": {
			overlay: listenerYAML("", `{name: hcm, config_discovery: {config_source: {ads: {}}}}`),
			want: []string{
				"static_resources.listeners[1].filter_chains[0].filters[0].config_discovery: not supported by Outrigger",
				"static_resources.listeners[1].filter_chains[0].filters[0].typed_config: required: the filter's type selects its implementation",
			},
		},
		"hcm field": {
			overlay: okHCM(", represent_ipv4_remote_address_as_ipv4_mapped_ipv6: true"),
			want:    []string{extraHCM + ".represent_ipv4_remote_address_as_ipv4_mapped_ipv6: not implemented by Envoy either (not yet implemented there), so not supported by Outrigger: hidden as not implemented in Envoy's API and read by no code of Envoy's: x-forwarded-for and x-envoy-external-address carry an IPv4 remote address as IPv4 there, as in Outrigger"},
		},
		"codec http3": {
			overlay: okHCM(", codec_type: HTTP3"),
			want:    []string{extraHCM + ".codec_type: HTTP3 is not supported by Outrigger (supported: AUTO, HTTP1, HTTP2)"},
		},
		"rds from a file": {
			overlay: hcmYAML(`stat_prefix: x, rds: {config_source: {path: /r.yaml}}, http_filters: [` + routerFilter + `]`),
			want: []string{
				extraHCM + ".rds.config_source: ads: {} or api_config_source is required: Outrigger takes route configurations from a gRPC stream or REST only",
				extraHCM + ".rds.route_config_name: required",
			},
		},
		"http filter of the wrong category": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [{name: log, typed_config: {"@type": ` + fileURL + `, path: /x}}, ` + routerFilter + `]`),
			want:    []string{extraHCM + `.http_filters[0].typed_config: extension "proxy.access_loggers.file" (category envoy.access_loggers) cannot be used here: expected category envoy.filters.http or envoy.filters.http.upstream`},
		},
		"router fields are all supported": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [{name: router, typed_config: {"@type": ` + routerURL + `, respect_expected_rq_timeout: true}}]`),
			want:    nil,
		},
		"virtual host field": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], matcher: {matcher_list: {matchers: []}}, routes: [` + okRoute + `]}]}, http_filters: [` + routerFilter + `]`),
			want:    []string{extraHCM + ".route_config.virtual_hosts[0].matcher: not supported by Outrigger"},
		},
		"route action": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], routes: [{match: {prefix: /}, route: {cluster: backend, retry_policy: {retry_options_predicates: [{name: p}]}}}]}]}, http_filters: [` + routerFilter + `]`),
			want:    []string{extraHCM + ".route_config.virtual_hosts[0].routes[0].route.retry_policy.retry_options_predicates: not supported by Outrigger: Envoy has no built-in retry options predicate (the envoy.retry_options_predicates category holds none), so none could be configured"},
		},
		"hedge on per-try timeout": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], hedge_policy: {hedge_on_per_try_timeout: true}, routes: [{match: {prefix: /}, route: {cluster: backend, hedge_policy: {hedge_on_per_try_timeout: true}}}]}]}, http_filters: [` + routerFilter + `]`),
		},
		"hedge policy fields Envoy does not implement, at their defaults": {
			// Other values are refused by package router.
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], hedge_policy: {initial_requests: 1}, routes: [{match: {prefix: /}, route: {cluster: backend, hedge_policy: {additional_request_chance: {numerator: 0}}}}]}]}, http_filters: [` + routerFilter + `]`),
		},
		"refresh_cluster_on_retry": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], routes: [{match: {prefix: /}, route: {cluster: backend, retry_policy: {retry_on: 5xx, refresh_cluster_on_retry: true}}}]}]}, http_filters: [` + routerFilter + `]`),
		},
		"empty hedge policy": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], hedge_policy: {}, routes: [{match: {prefix: /}, route: {cluster: backend, hedge_policy: {}}}]}]}, http_filters: [` + routerFilter + `]`),
		},
		"route match tls_context": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], routes: [{match: {prefix: /, tls_context: {presented: true, validated: false}}, direct_response: {status: 200}}]}]}, http_filters: [` + routerFilter + `]`),
		},
		"direct response from an environment variable": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [a], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {environment_variable: BODY}}}]}]}, http_filters: [` + routerFilter + `]`),
		},
		"disabled hcm, envoy spelling": {
			disable: []string{"envoy.filters.network/envoy.filters.network.http_connection_manager"},
			want:    []string{`static_resources.listeners[0].filter_chains[0].filters[0].typed_config: extension "proxy.filters.network.http_connection_manager" is disabled by --disable-extensions`},
		},
		"disabled router, proxy spelling": {
			disable: []string{"envoy.filters.http/proxy.filters.http.router"},
			want:    []string{`static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config: extension "proxy.filters.http.router" is disabled by --disable-extensions`},
		},
		"disabled file logger": {
			disable: []string{"envoy.access_loggers/envoy.access_loggers.file"},
			want:    []string{`admin.access_log[0].typed_config: extension "proxy.access_loggers.file" is disabled by --disable-extensions`},
		},
	})
}

func TestValidateConstraints(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"port out of range": {
			overlay: "admin: {address: {socket_address: {port_value: 70000}}}",
			want:    []string{"admin.address.socket_address.port_value: value must be less than or equal to 65535"},
		},
		"flush interval too short": {
			// Standalone: merged over full.yaml's 10s, it would add to it
			// (Duration is a message, and messages merge field by field).
			overlay:    "stats_flush_interval: 0.0001s",
			standalone: true,
			want:       []string{"stats_flush_interval: value must be inside range [1ms, 5m0s)"},
		},
		"layer without a kind": {
			overlay: "layered_runtime: {layers: [{name: empty}]}",
			want:    []string{"layered_runtime.layers[3].layer_specifier: value is required"},
		},
		"inside typed_config": {
			overlay: hcmYAML(`stat_prefix: "", ` + okRouteCfg + `, http_filters: [` + routerFilter + `]`),
			want:    []string{extraHCM + ".stat_prefix: value length must be at least 1 runes"},
		},
		"hcm without route_config": {
			overlay: hcmYAML(`stat_prefix: x, http_filters: [` + routerFilter + `]`),
			want:    []string{extraHCM + ".route_specifier: value is required"},
		},
		"deep inside typed_config": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: v, domains: [], routes: [{match: {prefix: /}, direct_response: {status: 99}}]}]}, http_filters: [` + routerFilter + `]`),
			want: []string{
				extraHCM + ".route_config.virtual_hosts[0].domains: value must contain at least 1 item(s)",
				extraHCM + ".route_config.virtual_hosts[0].routes[0].direct_response.status: value must be inside range [200, 600)",
			},
		},
		"inside an access log": {
			overlay: accessLogYAML(`{"@type": ` + fileURL + `}`),
			want:    []string{"admin.access_log[1].typed_config.path: value length must be at least 1 runes"},
		},
	})
}

func TestValidateSemantics(t *testing.T) {
	runValidateCases(t, map[string]validateCase{
		"admin without address": {
			overlay:    "admin: {profile_path: /tmp/p}",
			standalone: true,
			want:       []string{"admin.address: required when admin is set"},
		},
		"duplicate listener name": {
			overlay: strings.Replace(okHCM(""), "name: extra", "name: ingress", 1),
			want:    []string{`static_resources.listeners[1].name: duplicate listener name "ingress" (also static_resources.listeners[0])`},
		},
		"duplicate address": {
			overlay: strings.Replace(okHCM(""), "port_value: 0", "port_value: 10000", 1),
			want:    []string{"static_resources.listeners[1].address: address 127.0.0.1:10000 is already used by static_resources.listeners[0]"},
		},
		"listener without address": {
			overlay: `static_resources: {listeners: [{name: extra, filter_chains: [{filters: [{name: hcm, typed_config: {"@type": ` + hcmURL + `, stat_prefix: x, ` + okRouteCfg + `, http_filters: [` + routerFilter + `]}}]}]}]}`,
			want:    []string{"static_resources.listeners[1].address: required: a listener must have an address"},
		},
		"listener without filter chains": {
			overlay: "static_resources: {listeners: [{name: extra, address: {socket_address: {address: 127.0.0.1, port_value: 0}}}]}",
			want:    []string{"static_resources.listeners[1].filter_chains: a listener must have at least one filter chain"},
		},
		"default filter chain checked": {
			overlay: "static_resources: {listeners: [{name: extra, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, default_filter_chain: {filters: [{name: hcm}]}}]}",
			want:    []string{"static_resources.listeners[1].default_filter_chain.filters[0].typed_config: required: the filter's type selects its implementation"},
		},
		"hcm not last": {
			overlay: listenerYAML("", `{name: a, typed_config: {"@type": `+hcmURL+`, stat_prefix: a, `+okRouteCfg+`, http_filters: [`+routerFilter+`]}}, {name: b, typed_config: {"@type": `+hcmURL+`, stat_prefix: b, `+okRouteCfg+`, http_filters: [`+routerFilter+`]}}`),
			want:    []string{"static_resources.listeners[1].filter_chains[0].filters[0]: proxy.filters.network.http_connection_manager is a terminal filter and must be the last in the filter chain"},
		},
		"network filter without typed_config": {
			overlay: listenerYAML("", `{name: envoy.filters.network.http_connection_manager}`),
			want:    []string{"static_resources.listeners[1].filter_chains[0].filters[0].typed_config: required: the filter's type selects its implementation"},
		},
		"no http filters": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg),
			want:    []string{extraHCM + ".http_filters: must end with the router filter (proxy.filters.http.router)"},
		},
		"router not last": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [` + routerFilter + `, ` + routerFilter + `]`),
			want:    []string{extraHCM + ".http_filters[0]: the router filter must be the last HTTP filter"},
		},
		"last http filter not the router": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [` + routerFilter + `, {name: log, typed_config: {"@type": ` + fileURL + `, path: /x}}]`),
			want: []string{
				extraHCM + `.http_filters[1].typed_config: extension "proxy.access_loggers.file" (category envoy.access_loggers) cannot be used here: expected category envoy.filters.http or envoy.filters.http.upstream`,
				extraHCM + ".http_filters[0]: the router filter must be the last HTTP filter",
				extraHCM + ".http_filters[1]: the last HTTP filter must be the router filter (proxy.filters.http.router)",
			},
		},
		"http filters named only, resolved by name": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [{name: envoy.filters.http.health_check}, {name: proxy.filters.http.router}]`),
		},
		"an empty typed_config beside a name": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [{name: envoy.filters.http.router, typed_config: {}}]`),
		},
		"an unknown http filter named only": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [{name: envoy.filters.http.gzip}, {name: envoy.filters.http.router}]`),
			want:    []string{extraHCM + `.http_filters[0].name: filter "envoy.filters.http.gzip" without typed_config is not a registered HTTP filter (see docs/extensions.md)`},
		},
		"a named-only filter last that is not the router": {
			overlay: hcmYAML(`stat_prefix: x, ` + okRouteCfg + `, http_filters: [{name: envoy.filters.http.health_check}]`),
			want:    []string{extraHCM + ".http_filters[0]: the last HTTP filter must be the router filter (proxy.filters.http.router)"},
		},
		"duplicate domains": {
			overlay: hcmYAML(`stat_prefix: x, route_config: {virtual_hosts: [{name: a, domains: ["*.example.com", b], routes: [` + okRoute + `]}, {name: c, domains: ["*.Example.COM"], routes: [` + okRoute + `]}]}, http_filters: [` + routerFilter + `]`),
			want:    []string{extraHCM + `.route_config.virtual_hosts[1].domains[0]: duplicate domain "*.Example.COM" (also ` + extraHCM + `.route_config.virtual_hosts[0].domains[0])`},
		},
		"duplicate layer name": {
			overlay: "layered_runtime: {layers: [{name: static, static_layer: {}}]}",
			want:    []string{`layered_runtime.layers[3].name: duplicate layer name "static" (also layered_runtime.layers[0])`},
		},
		"two admin layers": {
			overlay: "layered_runtime: {layers: [{name: admin2, admin_layer: {}}]}",
			want:    []string{"layered_runtime.layers[3].admin_layer: at most one admin layer may be specified (also layered_runtime.layers[2])"},
		},
	})
}

// TestValidateGolden pins the whole error list of a configuration that is
// wrong in many ways at once: every problem is reported, in a stable order.
func TestValidateGolden(t *testing.T) {
	b := loadFixture(t, "invalid.yaml")
	err := Validate(b, builtin.Registry())
	if err == nil {
		t.Fatal("Validate accepted invalid.yaml")
	}
	fieldErrors(t, err) // every part is a *FieldError
	checkGolden(t, "invalid.golden", []byte(err.Error()+"\n"))
}

func TestValidateNil(t *testing.T) {
	var fe *FieldError
	if err := Validate(nil, builtin.Registry()); !errors.As(err, &fe) || fe.Reason != "no configuration" {
		t.Errorf("Validate(nil) = %v, want a FieldError \"no configuration\"", err)
	}
}

// TestSupportTable checks the table itself: every line names a real field,
// enum restrictions name real values, and every supported typed_config
// field says which extension category it takes. No field is listed in two
// of the per-area tables.
func TestSupportTable(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	for _, table := range supportTables {
		for name := range table {
			if seen[name] {
				t.Errorf("%s is listed in two support tables", name)
			}
			seen[name] = true
		}
	}
	for _, table := range supportTables {
		for name, rule := range table {
			testSupportRule(t, name, rule)
		}
	}
}

// testSupportRule checks one line of a support table.
func testSupportRule(t *testing.T, name protoreflect.FullName, rule fieldSupport) {
	t.Helper()
	t.Run(string(name), func(t *testing.T) {
		md, err := protoregistry.GlobalFiles.FindDescriptorByName(name.Parent())
		if err != nil {
			t.Fatalf("message %s: %v", name.Parent(), err)
		}
		msg, ok := md.(protoreflect.MessageDescriptor)
		if !ok {
			t.Fatalf("%s is not a message", name.Parent())
		}
		fd := msg.Fields().ByName(name.Name())
		if fd == nil {
			t.Fatalf("%s has no field %s", name.Parent(), name.Name())
		}
		for _, v := range rule.values {
			if fd.Enum() == nil || fd.Enum().Values().ByName(protoreflect.Name(v)) == nil {
				t.Errorf("value %s is not a value of %s", v, name)
			}
		}
		vd := fd
		if fd.IsMap() && len(rule.types) > 0 {
			// A map of typed messages (typed_filter_metadata).
			vd = fd.MapValue()
		}
		isAny := vd.Message() != nil && vd.Message().FullName() == anyFullName
		if isAny != (rule.category != "" || len(rule.types) > 0 || rule.data) {
			t.Errorf("typed_config field %v has category %q and types %v", isAny, rule.category, rule.types)
		}
		if rule.data && (rule.category != "" || len(rule.types) > 0) {
			t.Errorf("a value Any (data) takes any type, neither a category nor types")
		}
		if rule.category != "" && len(rule.types) > 0 {
			t.Errorf("a typed_config takes extensions of a category or messages of types, not both")
		}
		for _, name := range rule.types {
			if _, err := protoregistry.GlobalTypes.FindMessageByName(name); err != nil {
				t.Errorf("type %s: %v", name, err)
			}
		}
	})
}

// TestSupportIgnoresUnsetFields: only populated fields are checked, so an
// empty configuration passes.
func TestSupportIgnoresUnsetFields(t *testing.T) {
	b := &bootstrapv3.Bootstrap{}
	if err := Validate(b, builtin.Registry()); err != nil {
		t.Errorf("empty bootstrap: %v", err)
	}
}
