// Package builtin is the one list of the extensions Outrigger links in:
// what the configuration may name, what /server_info reports and what
// docs/extensions.md shows all come from Registry. Adding an extension is a
// package of its own and one line here.
package builtin

import (
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	celfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	grpcalsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	otelalv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/open_telemetry/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	ilv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/bootstrap/internal_listener/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	dnsclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dns/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	brotlicv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	brotlidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/decompressor/v3"
	gzipcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	gzipdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/decompressor/v3"
	zstdcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	zstddv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/decompressor/v3"
	earlydatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/early_data/v3"
	adaptiveconcurrencyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/adaptive_concurrency/v3"
	admissioncontrolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/admission_control/v3"
	apikeyauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	bandwidthlimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/bandwidth_limit/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cache/v3"
	cdnloopv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cdn_loop/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	credentialinjectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	csrfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/csrf/v3"
	customresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	decompressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/decompressor/v3"
	dfphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_forward_proxy/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	grpchttp1bridgev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_http1_bridge/v3"
	grpcreversebridgev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_http1_reverse_bridge/v3"
	grpcjsontranscoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	grpcstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	grpcwebv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	headertometadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_to_metadata/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	iptaggingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ip_tagging/v3"
	j2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/json_to_metadata/v3"
	jwtauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	killrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/kill_request/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	ondemandv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
	httporiginalsrcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/original_src/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	httprbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	httpsfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_filter_state/v3"
	setmetadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_metadata/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	taphttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/tap/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	httpinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	listenerlrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/local_ratelimit/v3"
	originaldstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	originalsrcv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_src/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	connlimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	drv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/direct_response/v3"
	echov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/echo/v3"
	netextauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ext_authz/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netlrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/local_ratelimit/v3"
	netratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/ratelimit/v3"
	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	netsfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/set_filter_state/v3"
	sniclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_cluster/v3"
	snidfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	dnsfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/dns_filter/v3"
	udpcapsulev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/session/http_capsule/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	celfmtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/cel/v3"
	metadatafmtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/metadata/v3"
	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	filesinkv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/health_check/event_sinks/file/v3"
	simplecachev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/cache/simple_http_cache/v3"
	earlyhmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	mappedattrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/ext_proc/processing_request_modifiers/mapped_attribute_builder/v3"
	saveprocrespv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/ext_proc/response_processors/save_processing_response/v3"
	preservecasev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/header_formatters/preserve_case/v3"
	injgenericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	injoauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/oauth2/v3"
	ipcustomheaderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/custom_header/v3"
	ipxffv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/xff/v3"
	sessioncookiev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	sessionenvelopev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/envelope/v3"
	sessionheaderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	allowlistedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/allow_listed_routes/v3"
	previousroutesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/previous_routes/v3"
	safeschemev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/safe_cross_scheme/v3"
	filebasedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/key_value/file_based/v3"
	clusterprovidedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/cluster_provided/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	randomv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	getaddrinfov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/getaddrinfo/v3"
	uritemplatematchv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/path/match/uri_template/v3"
	uritemplaterewritev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/path/rewrite/uri_template/v3"
	rldexprv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rate_limit_descriptors/expr/v3"
	upstreamipportv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/matchers/upstream_ip_port/v3"
	mtlsauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/principals/mtls_authenticated/v3"
	googlere2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/regex_engines/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	cgroupmemoryv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/cgroup_memory/v3"
	cpuutilizationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/cpu_utilization/v3"
	connectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	fixedheapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
	injectedresourcev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/injected_resource/v3"
	cslluav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/lua/v3"
	cslmatcherv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/matcher/v3"
	graphitev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/stat_sinks/graphite_statsd/v3"
	otlpsinkv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/stat_sinks/open_telemetry/v3"
	strluav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/string_matcher/lua/v3"
	otelresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	otelsamplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	h11v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	iuv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	upstreamppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	taptransportv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tap/v3"
	tcpstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tcp_stats/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/als"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/file"
	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter/celfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/formatter/celfmt"
	metadatafmt "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/formatter/metadata"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/formatter/reqwithoutquery"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/otel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/stream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier"
	csllua "github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier/lua"
	cslmatcher "github.com/outrigger-dev/outrigger/pkg/proxy/clusterspecifier/matcher"
	"github.com/outrigger-dev/outrigger/pkg/proxy/compression"
	"github.com/outrigger-dev/outrigger/pkg/proxy/compression/brotli"
	"github.com/outrigger-dev/outrigger/pkg/proxy/compression/gzip"
	"github.com/outrigger-dev/outrigger/pkg/proxy/compression/zstd"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/earlyheadermutation"
	earlyhm "github.com/outrigger-dev/outrigger/pkg/proxy/earlyheadermutation/headermutation"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/adaptiveconcurrency"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/admissioncontrol"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/apikeyauth"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/bandwidthlimit"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/basicauth"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/buffer"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/cache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/cache/simple"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/cdnloop"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/composite"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/compressor"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/cors"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/credentialinjector"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/csrf"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/customresponse"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/decompressor"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/dynamicforwardproxy"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/extauthz"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/extproc"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/fault"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/grpchttp1bridge"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/grpchttp1reversebridge"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/grpcjsontranscoder"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/grpcstats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/grpcweb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/headermutation"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/headertometadata"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/healthcheck"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/iptagging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/jsontometadata"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/jwtauthn"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/killrequest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/localratelimit"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/lua"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/matchdelegate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/oauth2"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/ondemand"
	httporiginalsrc "github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/originalsrc"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/ratelimit"
	httprbac "github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/rbac"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	httpsetfilterstate "github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/setfilterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/setmetadata"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/statefulsession"
	httptap "github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/tap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/upstreamcodec"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/listener/httpinspector"
	listenerlocalratelimit "github.com/outrigger-dev/outrigger/pkg/proxy/filters/listener/localratelimit"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/listener/originaldst"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/listener/originalsrc"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/listener/proxyprotocol"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/listener/tlsinspector"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/connectionlimit"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/directresponse"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/echo"
	netextauthz "github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/extauthz"
	netlocalratelimit "github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/localratelimit"
	netratelimit "github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/ratelimit"
	netrbac "github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/rbac"
	netsetfilterstate "github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/setfilterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/snicluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/snidynamicforwardproxy"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/network/tcpproxy"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/rbacengine"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/udp/dnsfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/udp/session/httpcapsule"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/udp/udpproxy"
	"github.com/outrigger-dev/outrigger/pkg/proxy/healthcheck/eventsink"
	"github.com/outrigger-dev/outrigger/pkg/proxy/injectedcredentials"
	injgeneric "github.com/outrigger-dev/outrigger/pkg/proxy/injectedcredentials/generic"
	injoauth2 "github.com/outrigger-dev/outrigger/pkg/proxy/injectedcredentials/oauth2"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
	ipcustomheader "github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection/customheader"
	ipxff "github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection/xff"
	"github.com/outrigger-dev/outrigger/pkg/proxy/keyvalue/filebased"
	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid/uuid"
	routetable "github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
	sessioncookie "github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate/cookie"
	sessionenvelope "github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate/envelope"
	sessionheader "github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate/header"
	strlua "github.com/outrigger-dev/outrigger/pkg/proxy/stringmatcher/lua"
	taptransport "github.com/outrigger-dev/outrigger/pkg/proxy/tap/transport"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/resourcedetectors/environment"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/resourcedetectors/staticconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/samplers/alwayson"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/samplers/parentbased"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry/samplers/traceidratio"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/zipkin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstreamproxyprotocol"
)

// Envoy's extension categories.
const (
	AccessLoggers      = "envoy.access_loggers"
	Clusters           = "envoy.clusters"
	Formatters         = "envoy.formatter"
	HTTPFilters        = "envoy.filters.http"
	ListenerFilters    = "envoy.filters.listener"
	NetworkFilters     = "envoy.filters.network"
	ResourceMonitors   = "envoy.resource_monitors"
	StatsSinks         = "envoy.stats_sinks"
	HTTPProtocolOption = "envoy.upstreams.http.http_protocol_options"
	RegexEngines       = "envoy.regex_engines"
	// RateLimitDescriptors are the route rate limit extension actions.
	RateLimitDescriptors = "envoy.rate_limit_descriptors"
	Tracers              = "envoy.tracers"
)

// HTTPUpstreamFilters is the category of the filters of upstream chains
// only (httpfilter.UpstreamCategory).
const HTTPUpstreamFilters = "envoy.filters.http.upstream"

// Registry returns a new registry of every extension Outrigger implements,
// none disabled, sorted by category, then name. Referencing the config
// messages also links their packages in, which registers their types so
// that typed_config values of these types can be decoded.
func Registry() *extension.Registry {
	r, err := extension.New(
		extension.Of(file.Name, AccessLoggers, &filev3.FileAccessLog{}, file.Factory{}),
		extension.Of(als.HTTPName, AccessLoggers, &grpcalsv3.HttpGrpcAccessLogConfig{}, als.HTTP{}),
		extension.Of(otel.Name, AccessLoggers, &otelalv3.OpenTelemetryAccessLogConfig{}, otel.Factory{}),
		extension.Of(stream.StderrName, AccessLoggers, &streamv3.StderrAccessLog{}, stream.Stderr{}),
		extension.Of(stream.StdoutName, AccessLoggers, &streamv3.StdoutAccessLog{}, stream.Stdout{}),
		extension.Of(als.TCPName, AccessLoggers, &grpcalsv3.TcpGrpcAccessLogConfig{}, als.TCP{}),

		extension.Of("proxy.clusters.aggregate", Clusters, &aggregatev3.ClusterConfig{}, nil),

		extension.Of(brotli.CompressorName, compression.CompressorCategory, &brotlicv3.Brotli{}, brotli.Compressor{}),
		extension.Of(gzip.CompressorName, compression.CompressorCategory, &gzipcv3.Gzip{}, gzip.Compressor{}),
		extension.Of(zstd.CompressorName, compression.CompressorCategory, &zstdcv3.Zstd{}, zstd.Compressor{}),

		extension.Of("proxy.clusters.dns", dnscache.ClusterTypeCategory, &dnsclusterv3.DnsCluster{}, nil),
		extension.Of(dnscache.ClusterTypeName, dnscache.ClusterTypeCategory, &dfpclusterv3.ClusterConfig{}, nil),

		extension.Of(brotli.DecompressorName, compression.DecompressorCategory, &brotlidv3.Brotli{}, brotli.Decompressor{}),
		extension.Of(gzip.DecompressorName, compression.DecompressorCategory, &gzipdv3.Gzip{}, gzip.Decompressor{}),
		extension.Of(zstd.DecompressorName, compression.DecompressorCategory, &zstddv3.Zstd{}, zstd.Decompressor{}),

		extension.Of(celfilter.Name, logfilter.ExtensionCategory, &celfilterv3.ExpressionFilter{}, celfilter.Factory{}),

		extension.Of(eventsink.FileName, eventsink.Category, &filesinkv3.HealthCheckEventFileSink{}, eventsink.File{}),

		extension.Of(celfmt.Name, Formatters, &celfmtv3.Cel{}, celfmt.Factory{}),
		extension.Of(metadatafmt.Name, Formatters, &metadatafmtv3.Metadata{}, metadatafmt.Factory{}),
		extension.Of(reqwithoutquery.Name, Formatters, &rwqv3.ReqWithoutQuery{}, reqwithoutquery.Factory{}),

		extension.Of(adaptiveconcurrency.Name, HTTPFilters, &adaptiveconcurrencyv3.AdaptiveConcurrency{}, adaptiveconcurrency.Factory{}),
		extension.Of(admissioncontrol.Name, HTTPFilters, &admissioncontrolv3.AdmissionControl{}, admissioncontrol.Factory{}),
		extension.Of(apikeyauth.Name, HTTPFilters, &apikeyauthv3.ApiKeyAuth{}, apikeyauth.Factory{}).WithRouteConfig(&apikeyauthv3.ApiKeyAuthPerRoute{}),
		extension.Of(bandwidthlimit.Name, HTTPFilters, &bandwidthlimitv3.BandwidthLimit{}, bandwidthlimit.Factory{}).WithRouteConfig(&bandwidthlimitv3.BandwidthLimit{}),
		extension.Of(buffer.Name, HTTPFilters, &bufferv3.Buffer{}, buffer.Factory{}).WithRouteConfig(&bufferv3.BufferPerRoute{}),
		extension.Of(cache.Name, HTTPFilters, &cachev3.CacheConfig{}, cache.Factory{}),
		extension.Of(composite.Name, HTTPFilters, &compositev3.Composite{}, composite.Factory{}).WithRouteConfig(&compositev3.CompositePerRoute{}),
		extension.Of(compressor.Name, HTTPFilters, &compressorv3.Compressor{}, compressor.Factory{}).WithRouteConfig(&compressorv3.CompressorPerRoute{}),
		extension.Of(cors.Name, HTTPFilters, &corsv3.Cors{}, cors.Factory{}).WithRouteConfig(&corsv3.CorsPolicy{}),
		extension.Of(basicauth.Name, HTTPFilters, &basicauthv3.BasicAuth{}, basicauth.Factory{}).WithRouteConfig(&basicauthv3.BasicAuthPerRoute{}),
		extension.Of(cdnloop.Name, HTTPFilters, &cdnloopv3.CdnLoopConfig{}, cdnloop.Factory{}),
		extension.Of(credentialinjector.Name, HTTPFilters, &credentialinjectorv3.CredentialInjector{}, credentialinjector.Factory{}),
		extension.Of(csrf.Name, HTTPFilters, &csrfv3.CsrfPolicy{}, csrf.Factory{}).WithRouteConfig(&csrfv3.CsrfPolicy{}),
		extension.Of(customresponse.Name, HTTPFilters, &customresponsev3.CustomResponse{}, customresponse.Factory{}).WithRouteConfig(&customresponsev3.CustomResponse{}),
		extension.Of(decompressor.Name, HTTPFilters, &decompressorv3.Decompressor{}, decompressor.Factory{}),
		extension.Of(dynamicforwardproxy.Name, HTTPFilters, &dfphttpv3.FilterConfig{}, dynamicforwardproxy.Factory{}).WithRouteConfig(&dfphttpv3.PerRouteConfig{}),
		extension.Of(extauthz.Name, HTTPFilters, &extauthzv3.ExtAuthz{}, extauthz.Factory{}).WithRouteConfig(&extauthzv3.ExtAuthzPerRoute{}),
		extension.Of(extproc.Name, HTTPFilters, &extprocv3.ExternalProcessor{}, extproc.Factory{}).WithRouteConfig(&extprocv3.ExtProcPerRoute{}),
		// ext_proc's on_processing_response; the filter compiles it
		// (extproc/onresponse.go).
		extension.Of(extproc.SaveProcessingResponseName, extproc.ResponseProcessorsCategory, &saveprocrespv3.SaveProcessingResponse{}, nil),
		// Its processing_request_modifier, compiled there too
		// (extproc/modifier.go).
		extension.Of(extproc.MappedAttributeBuilderName, extproc.RequestModifiersCategory, &mappedattrv3.MappedAttributeBuilder{}, nil),
		extension.Of(fault.Name, HTTPFilters, &faultv3.HTTPFault{}, fault.Factory{}).WithRouteConfig(&faultv3.HTTPFault{}),
		extension.Of(grpcjsontranscoder.Name, HTTPFilters, &grpcjsontranscoderv3.GrpcJsonTranscoder{}, grpcjsontranscoder.Factory{}).WithRouteConfig(&grpcjsontranscoderv3.GrpcJsonTranscoder{}),
		extension.Of(grpcstats.Name, HTTPFilters, &grpcstatsv3.FilterConfig{}, grpcstats.Factory{}),
		extension.Of(grpchttp1bridge.Name, HTTPFilters, &grpchttp1bridgev3.Config{}, grpchttp1bridge.Factory{}),
		extension.Of(grpchttp1reversebridge.Name, HTTPFilters, &grpcreversebridgev3.FilterConfig{}, grpchttp1reversebridge.Factory{}).WithRouteConfig(&grpcreversebridgev3.FilterConfigPerRoute{}),
		extension.Of(grpcweb.Name, HTTPFilters, &grpcwebv3.GrpcWeb{}, grpcweb.Factory{}),
		extension.Of(headermutation.Name, HTTPFilters, &headermutationv3.HeaderMutation{}, headermutation.Factory{}).WithRouteConfig(&headermutationv3.HeaderMutationPerRoute{}),
		extension.Of(headertometadata.Name, HTTPFilters, &headertometadatav3.Config{}, headertometadata.Factory{}).WithRouteConfig(&headertometadatav3.Config{}),
		extension.Of(healthcheck.Name, HTTPFilters, &healthcheckv3.HealthCheck{}, healthcheck.Factory{}),
		extension.Of(iptagging.Name, HTTPFilters, &iptaggingv3.IPTagging{}, iptagging.Factory{}),
		extension.Of(jsontometadata.Name, HTTPFilters, &j2mv3.JsonToMetadata{}, jsontometadata.Factory{}),
		extension.Of(jwtauthn.Name, HTTPFilters, &jwtauthnv3.JwtAuthentication{}, jwtauthn.Factory{}).WithRouteConfig(&jwtauthnv3.PerRouteConfig{}),
		extension.Of(killrequest.Name, HTTPFilters, &killrequestv3.KillRequest{}, killrequest.Factory{}).WithRouteConfig(&killrequestv3.KillRequest{}),
		extension.Of(localratelimit.Name, HTTPFilters, &lrlv3.LocalRateLimit{}, localratelimit.Factory{}).WithRouteConfig(&lrlv3.LocalRateLimit{}),
		extension.Of(lua.Name, HTTPFilters, &luav3.Lua{}, lua.Factory{}).WithRouteConfig(&luav3.LuaPerRoute{}),
		extension.Of(matchdelegate.Name, HTTPFilters, &matchingv3.ExtensionWithMatcher{}, matchdelegate.Factory{}).WithRouteConfig(&matchingv3.ExtensionWithMatcherPerRoute{}),
		extension.Of(oauth2.Name, HTTPFilters, &oauth2v3.OAuth2{}, oauth2.Factory{}).WithRouteConfig(&oauth2v3.OAuth2PerRoute{}),
		extension.Of(ondemand.Name, HTTPFilters, &ondemandv3.OnDemand{}, ondemand.Factory{}).WithRouteConfig(&ondemandv3.PerRouteConfig{}),
		extension.Of(httporiginalsrc.Name, HTTPFilters, &httporiginalsrcv3.OriginalSrc{}, httporiginalsrc.Factory{}),
		extension.Of(ratelimit.Name, HTTPFilters, &ratelimitv3.RateLimit{}, ratelimit.Factory{}).WithRouteConfig(&ratelimitv3.RateLimitPerRoute{}),
		extension.Of(httprbac.Name, HTTPFilters, &httprbacv3.RBAC{}, httprbac.Factory{}).WithRouteConfig(&httprbacv3.RBACPerRoute{}),
		extension.Of(router.Name, HTTPFilters, &routerv3.Router{}, router.Factory{}),
		extension.Of(httpsetfilterstate.Name, HTTPFilters, &httpsfsv3.Config{}, httpsetfilterstate.Factory{}),
		extension.Of(setmetadata.Name, HTTPFilters, &setmetadatav3.Config{}, setmetadata.Factory{}),
		extension.Of(statefulsession.Name, HTTPFilters, &statefulsessionv3.StatefulSession{}, statefulsession.Factory{}).WithRouteConfig(&statefulsessionv3.StatefulSessionPerRoute{}),
		extension.Of(httptap.Name, HTTPFilters, &taphttpv3.Tap{}, httptap.Factory{}),

		extension.Of(injgeneric.Name, injectedcredentials.Category, &injgenericv3.Generic{}, injgeneric.Factory{}),
		extension.Of(injoauth2.Name, injectedcredentials.Category, &injoauth2v3.OAuth2{}, injoauth2.Factory{}),

		extension.Of(simple.Name, cache.StorageCategory, &simplecachev3.SimpleHttpCacheConfig{}, simple.NewFactory()),

		extension.Of(upstreamcodec.Name, HTTPUpstreamFilters, &upstreamcodecv3.UpstreamCodec{}, upstreamcodec.Factory{}),

		extension.Of(httpinspector.Name, ListenerFilters, &httpinspectorv3.HttpInspector{}, httpinspector.Factory{}),
		extension.Of(listenerlocalratelimit.Name, ListenerFilters, &listenerlrlv3.LocalRateLimit{}, listenerlocalratelimit.Factory{}),
		extension.Of(originaldst.Name, ListenerFilters, &originaldstv3.OriginalDst{}, originaldst.Factory{}),
		extension.Of(originalsrc.Name, ListenerFilters, &originalsrcv3.OriginalSrc{}, originalsrc.Factory{}),
		extension.Of(proxyprotocol.Name, ListenerFilters, &proxyprotocolv3.ProxyProtocol{}, proxyprotocol.Factory{}),
		extension.Of(tlsinspector.Name, ListenerFilters, &tlsinspectorv3.TlsInspector{}, tlsinspector.Factory{}),

		extension.Of(connectionlimit.Name, NetworkFilters, &connlimitv3.ConnectionLimit{}, connectionlimit.Factory{}),
		extension.Of(directresponse.Name, NetworkFilters, &drv3.Config{}, directresponse.Factory{}),
		extension.Of(echo.Name, NetworkFilters, &echov3.Echo{}, echo.Factory{}),
		extension.Of(netextauthz.Name, NetworkFilters, &netextauthzv3.ExtAuthz{}, netextauthz.Factory{}),
		extension.Of("proxy.filters.network.http_connection_manager", NetworkFilters, &hcmv3.HttpConnectionManager{}, nil),
		extension.Of(netlocalratelimit.Name, NetworkFilters, &netlrlv3.LocalRateLimit{}, netlocalratelimit.Factory{}),
		extension.Of(netratelimit.Name, NetworkFilters, &netratelimitv3.RateLimit{}, netratelimit.Factory{}),
		extension.Of(netrbac.Name, NetworkFilters, &netrbacv3.RBAC{}, netrbac.Factory{}),
		extension.Of(netsetfilterstate.Name, NetworkFilters, &netsfsv3.Config{}, netsetfilterstate.Factory{}),
		extension.Of(snicluster.Name, NetworkFilters, &sniclusterv3.SniCluster{}, snicluster.Factory{}),
		extension.Of(snidynamicforwardproxy.Name, NetworkFilters, &snidfpv3.FilterConfig{}, snidynamicforwardproxy.Factory{}),
		extension.Of(tcpproxy.Name, NetworkFilters, &tcpproxyv3.TcpProxy{}, tcpproxy.Factory{}),

		extension.Of(dnsfilter.Name, udpfilter.Category, &dnsfilterv3.DnsFilterConfig{}, dnsfilter.Factory{}),
		extension.Of(udpproxy.Name, udpfilter.Category, &udpproxyv3.UdpProxyConfig{}, udpproxy.Factory{}),
		extension.Of(httpcapsule.Name, udpfilter.SessionCategory, &udpcapsulev3.FilterConfig{}, httpcapsule.Factory{}),

		extension.Of(sessioncookie.Name, sessionstate.Category, &sessioncookiev3.CookieBasedSessionState{}, sessioncookie.Factory{}),
		extension.Of(sessionenvelope.Name, sessionstate.Category, &sessionenvelopev3.EnvelopeSessionState{}, sessionenvelope.Factory{}),
		extension.Of(sessionheader.Name, sessionstate.Category, &sessionheaderv3.HeaderBasedSessionState{}, sessionheader.Factory{}),

		extension.Of(lb.ClusterProvidedName, lb.Category, &clusterprovidedv3.ClusterProvided{}, lb.ClusterProvidedFactory{}),
		extension.Of(lb.LeastRequestName, lb.Category, &leastrequestv3.LeastRequest{}, lb.LeastRequestFactory{}),
		extension.Of(lb.MaglevName, lb.Category, &maglevv3.Maglev{}, lb.MaglevFactory{}),
		extension.Of(lb.RandomName, lb.Category, &randomv3.Random{}, lb.RandomFactory{}),
		extension.Of(lb.RingHashName, lb.Category, &ringhashv3.RingHash{}, lb.RingHashFactory{}),
		extension.Of(lb.RoundRobinName, lb.Category, &roundrobinv3.RoundRobin{}, lb.RoundRobinFactory{}),

		// Internal redirect predicates; package router compiles them with
		// the route that names them (router/internalredirect.go).
		extension.Of(routetable.AllowListedRoutesName, routetable.RedirectPredicateCategory, &allowlistedv3.AllowListedRoutesConfig{}, nil),
		extension.Of(routetable.PreviousRoutesName, routetable.RedirectPredicateCategory, &previousroutesv3.PreviousRoutesConfig{}, nil),
		extension.Of(routetable.SafeCrossSchemeName, routetable.RedirectPredicateCategory, &safeschemev3.SafeCrossSchemeConfig{}, nil),

		// The uri_template path matcher and rewriter; package router
		// compiles them with the route (router/uritemplate.go), and RBAC's
		// uri_template permission uses the matcher.
		extension.Of(routetable.URITemplateMatchName, routetable.PathMatchCategory, &uritemplatematchv3.UriTemplateMatchConfig{}, nil),
		extension.Of(routetable.URITemplateRewriteName, routetable.PathRewriteCategory, &uritemplaterewritev3.UriTemplateRewriteConfig{}, nil),

		// RBAC's mtls_authenticated principal (Principal.custom); package
		// rbacengine compiles it with the policies (rbacengine/custom.go).
		extension.Of(rbacengine.MTLSAuthenticatedName, rbacengine.PrincipalsCategory, &mtlsauthnv3.Config{}, nil),
		// Its one permission matcher (Permission.matcher), compiled there
		// too (rbacengine/upstreamipport.go).
		extension.Of(rbacengine.UpstreamIPPortName, rbacengine.MatchersCategory, &upstreamipportv3.UpstreamIpPortMatcher{}, nil),

		extension.Of(dns.CaresName, dns.Category, &caresv3.CaresDnsResolverConfig{}, dns.CaresFactory{}),
		extension.Of(dns.GetAddrInfoName, dns.Category, &getaddrinfov3.GetAddrInfoDnsResolverConfig{}, dns.GetAddrInfoFactory{}),
		// The DNS cache's key_value_config store (dnscache/persist.go).
		extension.Of(filebased.Name, filebased.Category, &filebasedv3.FileBasedKeyValueStoreConfig{}, filebased.Factory{}),

		// The CEL descriptor of route rate_limits' extension action; package
		// router compiles it (router.RateLimitDescriptorExprName).
		extension.Of("proxy.rate_limit_descriptors.expr", RateLimitDescriptors, &rldexprv3.Descriptor{}, nil),

		// Go's regexp is an RE2 engine: the bootstrap's default_regex_engine
		// may name it, as Envoy's only engine.
		extension.Of("proxy.regex_engines.google_re2", RegexEngines, &googlere2v3.GoogleRE2{}, nil),

		extension.Of(uuid.Name, requestid.Category, &uuidv3.UuidRequestIdConfig{}, uuid.Factory{}),

		extension.Of(ipxff.Name, ipdetection.Category, &ipxffv3.XffConfig{}, ipxff.Factory{}),

		// The HTTP/1 codec's preserve_case header formatter
		// (header_key_format.stateful_formatter), which the connection
		// manager and the clusters read (upstream.HTTP1Format).
		extension.Of("proxy.http.stateful_header_formatters.preserve_case", "envoy.http.stateful_header_formatters", &preservecasev3.PreserveCaseFormatterConfig{}, nil),

		// A route's early_data_policy: the default (safe requests only
		// may go as early data). Upstream connections (TCP, TLS through
		// Go's crypto/tls) send no early data, as Envoy's TCP ones do not,
		// so every request waits for the handshake under it.
		extension.Of("proxy.route.early_data_policy.default", "envoy.route.early_data_policy", &earlydatav3.DefaultEarlyDataPolicy{}, nil),
		extension.Of(ipcustomheader.Name, ipdetection.Category, &ipcustomheaderv3.CustomHeaderConfig{}, ipcustomheader.Factory{}),
		extension.Of(earlyhm.Name, earlyheadermutation.Category, &earlyhmv3.HeaderMutation{}, earlyhm.Factory{}),

		// Internal listeners (server/internal_listeners.go).
		extension.Of("proxy.bootstrap.internal_listener", "envoy.bootstrap", &ilv3.InternalListener{}, nil),

		extension.Of("proxy.resource_monitors.cgroup_memory", ResourceMonitors, &cgroupmemoryv3.CgroupMemoryConfig{}, nil),
		extension.Of("proxy.resource_monitors.cpu_utilization", ResourceMonitors, &cpuutilizationv3.CpuUtilizationConfig{}, nil),
		extension.Of("proxy.resource_monitors.fixed_heap", ResourceMonitors, &fixedheapv3.FixedHeapConfig{}, nil),
		extension.Of("proxy.resource_monitors.global_downstream_max_connections", ResourceMonitors, &connectionsv3.DownstreamConnectionsConfig{}, nil),
		extension.Of("proxy.resource_monitors.injected_resource", ResourceMonitors, &injectedresourcev3.InjectedResourceConfig{}, nil),

		extension.Of(csllua.Name, clusterspecifier.Category, &cslluav3.LuaConfig{}, csllua.Factory{}),
		extension.Of(cslmatcher.Name, clusterspecifier.Category, &cslmatcherv3.MatcherClusterSpecifier{}, cslmatcher.Factory{}),

		// A StringMatcher's custom extension, compiled where string
		// matchers are (router/stringmatch.go).
		extension.Of(strlua.Name, strlua.Category, &strluav3.Lua{}, nil),

		extension.Of("proxy.stat_sinks.dog_statsd", StatsSinks, &metricsv3.DogStatsdSink{}, nil),
		extension.Of("proxy.stat_sinks.graphite_statsd", StatsSinks, &graphitev3.GraphiteStatsdSink{}, nil),
		extension.Of("proxy.stat_sinks.hystrix", StatsSinks, &metricsv3.HystrixSink{}, nil),
		extension.Of("proxy.stat_sinks.metrics_service", StatsSinks, &metricsv3.MetricsServiceConfig{}, nil),
		extension.Of("proxy.stat_sinks.open_telemetry", StatsSinks, &otlpsinkv3.SinkConfig{}, nil),
		extension.Of("proxy.stat_sinks.statsd", StatsSinks, &metricsv3.StatsdSink{}, nil),

		extension.Of(opentelemetry.Name, Tracers, &tracev3.OpenTelemetryConfig{}, opentelemetry.Factory{}),
		extension.Of(zipkin.Name, Tracers, &tracev3.ZipkinConfig{}, zipkin.Factory{}),

		extension.Of(environment.Name, opentelemetry.ResourceDetectorCategory, &otelresv3.EnvironmentResourceDetectorConfig{}, environment.Detector{}),
		extension.Of(staticconfig.Name, opentelemetry.ResourceDetectorCategory, &otelresv3.StaticConfigResourceDetectorConfig{}, staticconfig.Detector{}),
		extension.Of(alwayson.Name, opentelemetry.SamplerCategory, &otelsamplersv3.AlwaysOnSamplerConfig{}, alwayson.Factory{}),
		extension.Of(parentbased.Name, opentelemetry.SamplerCategory, &otelsamplersv3.ParentBasedSamplerConfig{}, parentbased.Factory{}),
		extension.Of(traceidratio.Name, opentelemetry.SamplerCategory, &otelsamplersv3.TraceIdRatioBasedSamplerConfig{}, traceidratio.Factory{}),

		// Envoy's SPIFFE certificate validator, a validation context's
		// custom_validator_config (tlsconfig/spiffe.go).
		extension.Of(tlsconfig.SPIFFEExtensionName, tlsconfig.CertValidatorCategory, &tlsv3.SPIFFECertValidatorConfig{}, nil),

		extension.Of("proxy.transport_sockets.raw_buffer", tlsconfig.DownstreamCategory, &rawbufferv3.RawBuffer{}, nil),
		extension.Of(taptransport.Name, tlsconfig.DownstreamCategory, &taptransportv3.Tap{}, nil),
		extension.Of("proxy.transport_sockets.tcp_stats", tlsconfig.DownstreamCategory, &tcpstatsv3.Config{}, nil),
		extension.Of(tlsconfig.Name, tlsconfig.DownstreamCategory, &tlsv3.DownstreamTlsContext{}, nil),
		extension.Of("proxy.transport_sockets.raw_buffer", tlsconfig.UpstreamCategory, &rawbufferv3.RawBuffer{}, nil),
		extension.Of(taptransport.Name, tlsconfig.UpstreamCategory, &taptransportv3.Tap{}, nil),
		extension.Of(upstreamproxyprotocol.Name, tlsconfig.UpstreamCategory, &upstreamppv3.ProxyProtocolUpstreamTransport{}, nil),
		// The tcp_stats transport socket (package tcpstats).
		extension.Of("proxy.transport_sockets.tcp_stats", tlsconfig.UpstreamCategory, &tcpstatsv3.Config{}, nil),
		// The http_11_proxy transport socket (cluster/http11proxy.go).
		extension.Of("proxy.transport_sockets.http_11_proxy", tlsconfig.UpstreamCategory, &h11v3.Http11ProxyUpstreamTransport{}, nil),
		// The internal_upstream transport socket (cluster/internal_upstream.go).
		extension.Of("proxy.transport_sockets.internal_upstream", tlsconfig.UpstreamCategory, &iuv3.InternalUpstreamTransport{}, nil),
		extension.Of(tlsconfig.Name, tlsconfig.UpstreamCategory, &tlsv3.UpstreamTlsContext{}, nil),

		extension.Of("proxy.upstreams.http.http_protocol_options", HTTPProtocolOption, &upstreamhttpv3.HttpProtocolOptions{}, nil),
	)
	if err != nil {
		// The list above is fixed: a duplicate is a programming error,
		// which the package's tests catch.
		panic(err)
	}
	r.SetUnsupported(unsupportedReasons())
	return r
}
