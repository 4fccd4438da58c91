package builtin

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

func TestRegistry(t *testing.T) {
	var got []string
	for _, x := range Registry().List() {
		got = append(got, x.Category+" "+x.Name+" "+extension.TypeName(x.TypeURLs[0]))
	}
	want := []string{
		"envoy.access_loggers proxy.access_loggers.file envoy.extensions.access_loggers.file.v3.FileAccessLog",
		"envoy.access_loggers proxy.access_loggers.http_grpc envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig",
		"envoy.access_loggers proxy.access_loggers.open_telemetry envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig",
		"envoy.access_loggers proxy.access_loggers.stderr envoy.extensions.access_loggers.stream.v3.StderrAccessLog",
		"envoy.access_loggers proxy.access_loggers.stdout envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
		"envoy.access_loggers proxy.access_loggers.tcp_grpc envoy.extensions.access_loggers.grpc.v3.TcpGrpcAccessLogConfig",
		"envoy.access_loggers.extension_filters proxy.access_loggers.extension_filters.cel envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter",
		"envoy.bootstrap proxy.bootstrap.internal_listener envoy.extensions.bootstrap.internal_listener.v3.InternalListener",
		"envoy.clusters proxy.clusters.aggregate envoy.extensions.clusters.aggregate.v3.ClusterConfig",
		"envoy.clusters proxy.clusters.dns envoy.extensions.clusters.dns.v3.DnsCluster",
		"envoy.clusters proxy.clusters.dynamic_forward_proxy envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig",
		"envoy.common.key_value proxy.key_value.file_based envoy.extensions.key_value.file_based.v3.FileBasedKeyValueStoreConfig",
		"envoy.compression.compressor proxy.compression.brotli.compressor envoy.extensions.compression.brotli.compressor.v3.Brotli",
		"envoy.compression.compressor proxy.compression.gzip.compressor envoy.extensions.compression.gzip.compressor.v3.Gzip",
		"envoy.compression.compressor proxy.compression.zstd.compressor envoy.extensions.compression.zstd.compressor.v3.Zstd",
		"envoy.compression.decompressor proxy.compression.brotli.decompressor envoy.extensions.compression.brotli.decompressor.v3.Brotli",
		"envoy.compression.decompressor proxy.compression.gzip.decompressor envoy.extensions.compression.gzip.decompressor.v3.Gzip",
		"envoy.compression.decompressor proxy.compression.zstd.decompressor envoy.extensions.compression.zstd.decompressor.v3.Zstd",
		"envoy.filters.http proxy.filters.http.adaptive_concurrency envoy.extensions.filters.http.adaptive_concurrency.v3.AdaptiveConcurrency",
		"envoy.filters.http proxy.filters.http.admission_control envoy.extensions.filters.http.admission_control.v3.AdmissionControl",
		"envoy.filters.http proxy.filters.http.api_key_auth envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth",
		"envoy.filters.http proxy.filters.http.bandwidth_limit envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit",
		"envoy.filters.http proxy.filters.http.basic_auth envoy.extensions.filters.http.basic_auth.v3.BasicAuth",
		"envoy.filters.http proxy.filters.http.buffer envoy.extensions.filters.http.buffer.v3.Buffer",
		"envoy.filters.http proxy.filters.http.cache envoy.extensions.filters.http.cache.v3.CacheConfig",
		"envoy.filters.http proxy.filters.http.cdn_loop envoy.extensions.filters.http.cdn_loop.v3.CdnLoopConfig",
		"envoy.filters.http proxy.filters.http.composite envoy.extensions.filters.http.composite.v3.Composite",
		"envoy.filters.http proxy.filters.http.compressor envoy.extensions.filters.http.compressor.v3.Compressor",
		"envoy.filters.http proxy.filters.http.cors envoy.extensions.filters.http.cors.v3.Cors",
		"envoy.filters.http proxy.filters.http.credential_injector envoy.extensions.filters.http.credential_injector.v3.CredentialInjector",
		"envoy.filters.http proxy.filters.http.csrf envoy.extensions.filters.http.csrf.v3.CsrfPolicy",
		"envoy.filters.http proxy.filters.http.custom_response envoy.extensions.filters.http.custom_response.v3.CustomResponse",
		"envoy.filters.http proxy.filters.http.decompressor envoy.extensions.filters.http.decompressor.v3.Decompressor",
		"envoy.filters.http proxy.filters.http.dynamic_forward_proxy envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig",
		"envoy.filters.http proxy.filters.http.ext_authz envoy.extensions.filters.http.ext_authz.v3.ExtAuthz",
		"envoy.filters.http proxy.filters.http.ext_proc envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
		"envoy.filters.http proxy.filters.http.fault envoy.extensions.filters.http.fault.v3.HTTPFault",
		"envoy.filters.http proxy.filters.http.grpc_http1_bridge envoy.extensions.filters.http.grpc_http1_bridge.v3.Config",
		"envoy.filters.http proxy.filters.http.grpc_http1_reverse_bridge envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfig",
		"envoy.filters.http proxy.filters.http.grpc_json_transcoder envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder",
		"envoy.filters.http proxy.filters.http.grpc_stats envoy.extensions.filters.http.grpc_stats.v3.FilterConfig",
		"envoy.filters.http proxy.filters.http.grpc_web envoy.extensions.filters.http.grpc_web.v3.GrpcWeb",
		"envoy.filters.http proxy.filters.http.header_mutation envoy.extensions.filters.http.header_mutation.v3.HeaderMutation",
		"envoy.filters.http proxy.filters.http.header_to_metadata envoy.extensions.filters.http.header_to_metadata.v3.Config",
		"envoy.filters.http proxy.filters.http.health_check envoy.extensions.filters.http.health_check.v3.HealthCheck",
		"envoy.filters.http proxy.filters.http.ip_tagging envoy.extensions.filters.http.ip_tagging.v3.IPTagging",
		"envoy.filters.http proxy.filters.http.json_to_metadata envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata",
		"envoy.filters.http proxy.filters.http.jwt_authn envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
		"envoy.filters.http proxy.filters.http.kill_request envoy.extensions.filters.http.kill_request.v3.KillRequest",
		"envoy.filters.http proxy.filters.http.local_ratelimit envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
		"envoy.filters.http proxy.filters.http.lua envoy.extensions.filters.http.lua.v3.Lua",
		"envoy.filters.http proxy.filters.http.match_delegate envoy.extensions.common.matching.v3.ExtensionWithMatcher",
		"envoy.filters.http proxy.filters.http.oauth2 envoy.extensions.filters.http.oauth2.v3.OAuth2",
		"envoy.filters.http proxy.filters.http.on_demand envoy.extensions.filters.http.on_demand.v3.OnDemand",
		"envoy.filters.http proxy.filters.http.original_src envoy.extensions.filters.http.original_src.v3.OriginalSrc",
		"envoy.filters.http proxy.filters.http.ratelimit envoy.extensions.filters.http.ratelimit.v3.RateLimit",
		"envoy.filters.http proxy.filters.http.rbac envoy.extensions.filters.http.rbac.v3.RBAC",
		"envoy.filters.http proxy.filters.http.router envoy.extensions.filters.http.router.v3.Router",
		"envoy.filters.http proxy.filters.http.set_filter_state envoy.extensions.filters.http.set_filter_state.v3.Config",
		"envoy.filters.http proxy.filters.http.set_metadata envoy.extensions.filters.http.set_metadata.v3.Config",
		"envoy.filters.http proxy.filters.http.stateful_session envoy.extensions.filters.http.stateful_session.v3.StatefulSession",
		"envoy.filters.http proxy.filters.http.tap envoy.extensions.filters.http.tap.v3.Tap",
		"envoy.filters.http.upstream proxy.filters.http.upstream_codec envoy.extensions.filters.http.upstream_codec.v3.UpstreamCodec",
		"envoy.filters.listener proxy.filters.listener.http_inspector envoy.extensions.filters.listener.http_inspector.v3.HttpInspector",
		"envoy.filters.listener proxy.filters.listener.local_ratelimit envoy.extensions.filters.listener.local_ratelimit.v3.LocalRateLimit",
		"envoy.filters.listener proxy.filters.listener.original_dst envoy.extensions.filters.listener.original_dst.v3.OriginalDst",
		"envoy.filters.listener proxy.filters.listener.original_src envoy.extensions.filters.listener.original_src.v3.OriginalSrc",
		"envoy.filters.listener proxy.filters.listener.proxy_protocol envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol",
		"envoy.filters.listener proxy.filters.listener.tls_inspector envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
		"envoy.filters.network proxy.filters.network.connection_limit envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit",
		"envoy.filters.network proxy.filters.network.direct_response envoy.extensions.filters.network.direct_response.v3.Config",
		"envoy.filters.network proxy.filters.network.echo envoy.extensions.filters.network.echo.v3.Echo",
		"envoy.filters.network proxy.filters.network.ext_authz envoy.extensions.filters.network.ext_authz.v3.ExtAuthz",
		"envoy.filters.network proxy.filters.network.http_connection_manager envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
		"envoy.filters.network proxy.filters.network.local_ratelimit envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit",
		"envoy.filters.network proxy.filters.network.ratelimit envoy.extensions.filters.network.ratelimit.v3.RateLimit",
		"envoy.filters.network proxy.filters.network.rbac envoy.extensions.filters.network.rbac.v3.RBAC",
		"envoy.filters.network proxy.filters.network.set_filter_state envoy.extensions.filters.network.set_filter_state.v3.Config",
		"envoy.filters.network proxy.filters.network.sni_cluster envoy.extensions.filters.network.sni_cluster.v3.SniCluster",
		"envoy.filters.network proxy.filters.network.sni_dynamic_forward_proxy envoy.extensions.filters.network.sni_dynamic_forward_proxy.v3.FilterConfig",
		"envoy.filters.network proxy.filters.network.tcp_proxy envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
		"envoy.filters.udp.session proxy.filters.udp.session.http_capsule envoy.extensions.filters.udp.udp_proxy.session.http_capsule.v3.FilterConfig",
		"envoy.filters.udp_listener proxy.filters.udp.dns_filter envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig",
		"envoy.filters.udp_listener proxy.filters.udp_listener.udp_proxy envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig",
		"envoy.formatter proxy.formatter.cel envoy.extensions.formatter.cel.v3.Cel",
		"envoy.formatter proxy.formatter.metadata envoy.extensions.formatter.metadata.v3.Metadata",
		"envoy.formatter proxy.formatter.req_without_query envoy.extensions.formatter.req_without_query.v3.ReqWithoutQuery",
		"envoy.health_check.event_sinks proxy.health_check.event_sinks.file envoy.extensions.health_check.event_sinks.file.v3.HealthCheckEventFileSink",
		"envoy.http.cache proxy.extensions.http.cache.simple envoy.extensions.http.cache.simple_http_cache.v3.SimpleHttpCacheConfig",
		"envoy.http.early_header_mutation proxy.http.early_header_mutation.header_mutation envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation",
		"envoy.http.ext_proc.processing_request_modifiers proxy.http.ext_proc.processing_request_modifiers.mapped_attribute_builder envoy.extensions.http.ext_proc.processing_request_modifiers.mapped_attribute_builder.v3.MappedAttributeBuilder",
		"envoy.http.ext_proc.response_processors proxy.http.ext_proc.response_processors.save_processing_response envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse",
		"envoy.http.injected_credentials proxy.http.injected_credentials.generic envoy.extensions.http.injected_credentials.generic.v3.Generic",
		"envoy.http.injected_credentials proxy.http.injected_credentials.oauth2 envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2",
		"envoy.http.original_ip_detection proxy.http.original_ip_detection.custom_header envoy.extensions.http.original_ip_detection.custom_header.v3.CustomHeaderConfig",
		"envoy.http.original_ip_detection proxy.http.original_ip_detection.xff envoy.extensions.http.original_ip_detection.xff.v3.XffConfig",
		"envoy.http.stateful_header_formatters proxy.http.stateful_header_formatters.preserve_case envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig",
		"envoy.http.stateful_session proxy.http.stateful_session.cookie envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState",
		"envoy.http.stateful_session proxy.http.stateful_session.envelope envoy.extensions.http.stateful_session.envelope.v3.EnvelopeSessionState",
		"envoy.http.stateful_session proxy.http.stateful_session.header envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState",
		"envoy.internal_redirect_predicates proxy.internal_redirect_predicates.allow_listed_routes envoy.extensions.internal_redirect.allow_listed_routes.v3.AllowListedRoutesConfig",
		"envoy.internal_redirect_predicates proxy.internal_redirect_predicates.previous_routes envoy.extensions.internal_redirect.previous_routes.v3.PreviousRoutesConfig",
		"envoy.internal_redirect_predicates proxy.internal_redirect_predicates.safe_cross_scheme envoy.extensions.internal_redirect.safe_cross_scheme.v3.SafeCrossSchemeConfig",
		"envoy.load_balancing_policies proxy.load_balancing_policies.cluster_provided envoy.extensions.load_balancing_policies.cluster_provided.v3.ClusterProvided",
		"envoy.load_balancing_policies proxy.load_balancing_policies.least_request envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest",
		"envoy.load_balancing_policies proxy.load_balancing_policies.maglev envoy.extensions.load_balancing_policies.maglev.v3.Maglev",
		"envoy.load_balancing_policies proxy.load_balancing_policies.random envoy.extensions.load_balancing_policies.random.v3.Random",
		"envoy.load_balancing_policies proxy.load_balancing_policies.ring_hash envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash",
		"envoy.load_balancing_policies proxy.load_balancing_policies.round_robin envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin",
		"envoy.network.dns_resolver proxy.network.dns_resolver.cares envoy.extensions.network.dns_resolver.cares.v3.CaresDnsResolverConfig",
		"envoy.network.dns_resolver proxy.network.dns_resolver.getaddrinfo envoy.extensions.network.dns_resolver.getaddrinfo.v3.GetAddrInfoDnsResolverConfig",
		"envoy.path.match proxy.path.match.uri_template.uri_template_matcher envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig",
		"envoy.path.rewrite proxy.path.rewrite.uri_template.uri_template_rewriter envoy.extensions.path.rewrite.uri_template.v3.UriTemplateRewriteConfig",
		"envoy.rate_limit_descriptors proxy.rate_limit_descriptors.expr envoy.extensions.rate_limit_descriptors.expr.v3.Descriptor",
		"envoy.rbac.matchers proxy.rbac.matchers.upstream_ip_port envoy.extensions.rbac.matchers.upstream_ip_port.v3.UpstreamIpPortMatcher",
		"envoy.rbac.principals proxy.rbac.principals.mtls_authenticated envoy.extensions.rbac.principals.mtls_authenticated.v3.Config",
		"envoy.regex_engines proxy.regex_engines.google_re2 envoy.extensions.regex_engines.v3.GoogleRE2",
		"envoy.request_id proxy.request_id.uuid envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig",
		"envoy.resource_monitors proxy.resource_monitors.cgroup_memory envoy.extensions.resource_monitors.cgroup_memory.v3.CgroupMemoryConfig",
		"envoy.resource_monitors proxy.resource_monitors.cpu_utilization envoy.extensions.resource_monitors.cpu_utilization.v3.CpuUtilizationConfig",
		"envoy.resource_monitors proxy.resource_monitors.fixed_heap envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig",
		"envoy.resource_monitors proxy.resource_monitors.global_downstream_max_connections envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
		"envoy.resource_monitors proxy.resource_monitors.injected_resource envoy.extensions.resource_monitors.injected_resource.v3.InjectedResourceConfig",
		"envoy.route.early_data_policy proxy.route.early_data_policy.default envoy.extensions.early_data.v3.DefaultEarlyDataPolicy",
		"envoy.router.cluster_specifier_plugin proxy.router.cluster_specifier_plugin.lua envoy.extensions.router.cluster_specifiers.lua.v3.LuaConfig",
		"envoy.router.cluster_specifier_plugin proxy.router.cluster_specifier_plugin.matcher envoy.extensions.router.cluster_specifiers.matcher.v3.MatcherClusterSpecifier",
		"envoy.stats_sinks proxy.stat_sinks.dog_statsd envoy.config.metrics.v3.DogStatsdSink",
		"envoy.stats_sinks proxy.stat_sinks.graphite_statsd envoy.extensions.stat_sinks.graphite_statsd.v3.GraphiteStatsdSink",
		"envoy.stats_sinks proxy.stat_sinks.hystrix envoy.config.metrics.v3.HystrixSink",
		"envoy.stats_sinks proxy.stat_sinks.metrics_service envoy.config.metrics.v3.MetricsServiceConfig",
		"envoy.stats_sinks proxy.stat_sinks.open_telemetry envoy.extensions.stat_sinks.open_telemetry.v3.SinkConfig",
		"envoy.stats_sinks proxy.stat_sinks.statsd envoy.config.metrics.v3.StatsdSink",
		"envoy.string_matcher proxy.string_matcher.lua envoy.extensions.string_matcher.lua.v3.Lua",
		"envoy.tls.cert_validator proxy.tls.cert_validator.spiffe envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig",
		"envoy.tracers proxy.tracers.opentelemetry envoy.config.trace.v3.OpenTelemetryConfig",
		"envoy.tracers proxy.tracers.zipkin envoy.config.trace.v3.ZipkinConfig",
		"envoy.tracers.opentelemetry.resource_detectors proxy.tracers.opentelemetry.resource_detectors.environment envoy.extensions.tracers.opentelemetry.resource_detectors.v3.EnvironmentResourceDetectorConfig",
		"envoy.tracers.opentelemetry.resource_detectors proxy.tracers.opentelemetry.resource_detectors.static_config envoy.extensions.tracers.opentelemetry.resource_detectors.v3.StaticConfigResourceDetectorConfig",
		"envoy.tracers.opentelemetry.samplers proxy.tracers.opentelemetry.samplers.always_on envoy.extensions.tracers.opentelemetry.samplers.v3.AlwaysOnSamplerConfig",
		"envoy.tracers.opentelemetry.samplers proxy.tracers.opentelemetry.samplers.parent_based envoy.extensions.tracers.opentelemetry.samplers.v3.ParentBasedSamplerConfig",
		"envoy.tracers.opentelemetry.samplers proxy.tracers.opentelemetry.samplers.trace_id_ratio_based envoy.extensions.tracers.opentelemetry.samplers.v3.TraceIdRatioBasedSamplerConfig",
		"envoy.transport_sockets.downstream proxy.transport_sockets.raw_buffer envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer",
		"envoy.transport_sockets.downstream proxy.transport_sockets.tap envoy.extensions.transport_sockets.tap.v3.Tap",
		"envoy.transport_sockets.downstream proxy.transport_sockets.tcp_stats envoy.extensions.transport_sockets.tcp_stats.v3.Config",
		"envoy.transport_sockets.downstream proxy.transport_sockets.tls envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
		"envoy.transport_sockets.upstream proxy.transport_sockets.http_11_proxy envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport",
		"envoy.transport_sockets.upstream proxy.transport_sockets.internal_upstream envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport",
		"envoy.transport_sockets.upstream proxy.transport_sockets.raw_buffer envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer",
		"envoy.transport_sockets.upstream proxy.transport_sockets.tap envoy.extensions.transport_sockets.tap.v3.Tap",
		"envoy.transport_sockets.upstream proxy.transport_sockets.tcp_stats envoy.extensions.transport_sockets.tcp_stats.v3.Config",
		"envoy.transport_sockets.upstream proxy.transport_sockets.tls envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
		"envoy.transport_sockets.upstream proxy.transport_sockets.upstream_proxy_protocol envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport",
		"envoy.upstreams.http.http_protocol_options proxy.upstreams.http.http_protocol_options envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the registry (-want +got):\n%s", diff)
	}
}

// TestHTTPFilters checks that every HTTP filter has a factory, and that
// its factory refuses another filter's configuration with an error rather
// than a panic.
func TestHTTPFilters(t *testing.T) {
	for _, x := range Registry().List() {
		if x.Category != HTTPFilters {
			continue
		}
		t.Run(x.Name, func(t *testing.T) {
			f, ok := x.Factory.(httpfilter.Factory)
			if !ok {
				t.Fatalf("factory %T is not an httpfilter.Factory", x.Factory)
			}
			if x.Config == nil {
				t.Fatal("no config message")
			}
			if _, err := f.Compile(&emptypb.Empty{}, httpfilter.Context{}); err == nil {
				t.Error("a configuration of another type was accepted")
			}
		})
	}
}

// TestEnvoyExtensions keeps envoy_extensions.txt in step with the
// registry: every registered extension is listed as supported, and an
// extension listed as plainly supported is registered.
func TestEnvoyExtensions(t *testing.T) {
	list, err := EnvoyExtensions()
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, x := range list {
		state[x.Name] = x.State
	}
	registered := map[string]bool{}
	for _, x := range Registry().List() {
		name := envoyName(x.Name)
		registered[name] = true
		switch st, ok := state[name]; {
		case !ok:
			t.Errorf("%s is registered but not in envoy_extensions.txt: add \"%s | %s | %s\" in name order", name, name, x.Category, Supported)
		case st != Supported:
			t.Errorf("%s is registered but envoy_extensions.txt says %q: make its state %q", name, st, Supported)
		}
	}
	for _, x := range list {
		if x.State == Supported && !registered[x.Name] {
			t.Errorf("envoy_extensions.txt says %s is supported but it is not registered: register it, say how the core supports it (\"supported: how\"), or say why not", x.Name)
		}
	}
}

// TestRefusalQuotesTheTable checks that refusing an extension the table
// lists as not supported quotes its reason and points at the table.
func TestRefusalQuotesTheTable(t *testing.T) {
	_, _, err := Registry().Resolve(extension.Ref{
		Kind:     "network filter",
		Category: NetworkFilters,
		Name:     "envoy.filters.network.redis_proxy",
		Config:   &anypb.Any{TypeUrl: "type.googleapis.com/envoy.extensions.filters.network.redis_proxy.v3.RedisProxy"},
	}, true)
	want := "typed_config: network filter type envoy.extensions.filters.network.redis_proxy.v3.RedisProxy is not supported by Outrigger" +
		" (envoy.filters.network.redis_proxy: a protocol proxy Outrigger does not carry); see docs/extensions.md"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestExtensionsDoc keeps docs/extensions.md the rendering of the registry
// and envoy_extensions.txt (go test -update rewrites it).
func TestExtensionsDoc(t *testing.T) {
	list, err := EnvoyExtensions()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "..", "..", "docs", "extensions.md"), []byte(renderDoc(Registry(), list)))
}

// envoyName is the envoy. spelling of an extension name.
func envoyName(name string) string {
	return "envoy." + strings.TrimPrefix(name, "proxy.")
}

// renderDoc renders docs/extensions.md: every Envoy extension, one table
// per category, with its state in Outrigger: the config types that select
// a registered one, how the core supports another, or why one is not
// supported.
func renderDoc(r *extension.Registry, list []EnvoyExtension) string {
	types := map[string][]string{}
	for _, x := range r.List() {
		name := envoyName(x.Name)
		// A transport socket's downstream and upstream factories may
		// share their config type: list it once.
		if t := "`" + extension.TypeName(x.TypeURLs[0]) + "`"; !slices.Contains(types[name], t) {
			types[name] = append(types[name], t)
		}
	}
	byCategory := map[string][]EnvoyExtension{}
	for _, x := range list {
		byCategory[x.Category] = append(byCategory[x.Category], x)
	}
	var b strings.Builder
	b.WriteString(`# Extensions

Every extension name of Envoy, by category, with its state in Outrigger. The ` + "`@type`" + ` of a
` + "`typed_config`" + ` chooses the extension; the name of a supported one can be written with the
` + "`proxy.`" + ` or the ` + "`envoy.`" + ` prefix, and ` + "`--disable-extensions <category>/<name>`" + ` turns one
off. Anything else is refused at start-up with its field path and, when this page lists it,
the reason given here. This page is generated from the registry and
` + "`pkg/proxy/builtin/envoy_extensions.txt`" + ` by their test:
` + "`go test ./pkg/proxy/builtin/ -run TestExtensionsDoc -update`" + ` rewrites it.
`)
	for _, category := range slices.Sorted(maps.Keys(byCategory)) {
		fmt.Fprintf(&b, "\n## `%s`\n\n| name | state | config type, or reason |\n|---|---|---|\n", category)
		for _, x := range byCategory[category] {
			state, note := "not supported", x.State
			switch {
			case x.State == Supported:
				state, note = Supported, strings.Join(types[x.Name], ", ")
			case x.IsSupported():
				state, note = Supported, strings.TrimPrefix(x.State, Supported+": ")
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", x.Name, state, note)
		}
	}
	return b.String()
}
