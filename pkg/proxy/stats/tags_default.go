package stats

import "regexp"

// defaultExtractor is one of Envoy's default tag extractors
// (source/common/config/well_known_names.cc), with the tag renamed from
// "envoy.*" to "proxy.*".
type defaultExtractor struct {
	name, pattern, prefix, substr, exclude string
}

func (d defaultExtractor) compile() (tagExtractor, error) {
	re, err := regexp.Compile(d.pattern)
	if err != nil {
		return tagExtractor{}, err
	}
	x := tagExtractor{name: d.name, re: re, prefix: d.prefix, exclude: d.exclude}
	// "^prefix((value)\.)" is most of the table and the commonest match:
	// it needs no regex run (and no allocation) to extract.
	x.tokenized = d.prefix != "" && d.pattern == "^"+regexp.QuoteMeta(d.prefix)+"(("+tv+`)\.)`
	x.fast = fastMatchers[d.pattern]
	if d.substr != "" {
		x.substr = []byte(d.substr)
	}
	return x, nil
}

// tv is a tag value: one dotted token.
const tv = `[^\.]+`

// defaultExtractors are evaluated in this order, roughly most specific
// first. Each regex's first group is removed from the name; its second
// group is the value.
var defaultExtractors = [...]defaultExtractor{
	// *_rq(_<response_code>)
	{name: "proxy.response_code", pattern: `_rq(_(\d{3}))$`, substr: "_rq_"},
	// *_rq_(<response_code_class>)xx
	{name: "proxy.response_code_class", pattern: `_rq_((\d))xx$`, substr: "_rq_"},
	// http.[<stat_prefix>.]dynamodb.table.[<table_name>.]capacity.[<operation_name>.](__partition_id=<last_seven_characters_from_partition_id>)
	{name: "proxy.dynamo_partition_id", pattern: `^http\.` + tv + `\.dynamodb\.table\.` + tv + `\.capacity\.` + tv + `(\.__partition_id=(\w{7}))$`, prefix: "http.", substr: ".dynamodb.table."},
	// http.[<stat_prefix>.]dynamodb.operation.(<operation_name>.)<base_stat> or
	// http.[<stat_prefix>.]dynamodb.table.[<table_name>.]capacity.(<operation_name>.)[<partition_id>]
	{name: "proxy.dynamo_operation", pattern: `^http\.` + tv + `\.dynamodb.(?:operation|table\.` + tv + `\.capacity)(\.(` + tv + `))(?:\.|$)`, prefix: "http.", substr: ".dynamodb."},
	// mongo.[<stat_prefix>.]collection.[<collection>.]callsite.(<callsite>.)query.<base_stat>
	{name: "proxy.mongo_callsite", pattern: `^mongo\.` + tv + `\.collection\.` + tv + `\.callsite\.((` + tv + `)\.)query\.`, prefix: "mongo.", substr: ".collection."},
	// http.[<stat_prefix>.]dynamodb.table.(<table_name>.) or http.[<stat_prefix>.]dynamodb.error.(<table_name>.)*
	{name: "proxy.dynamo_table", pattern: `^http\.` + tv + `\.dynamodb.(?:table|error)\.((` + tv + `)\.)`, prefix: "http.", substr: ".dynamodb."},
	// mongo.[<stat_prefix>.]collection.(<collection>.)query.<base_stat>
	{name: "proxy.mongo_collection", pattern: `^mongo\.` + tv + `\.collection\.((` + tv + `)\.).*?query\.`, prefix: "mongo.", substr: ".collection."},
	// mongo.[<stat_prefix>.]cmd.(<cmd>.)<base_stat>
	{name: "proxy.mongo_cmd", pattern: `^mongo\.` + tv + `\.cmd\.((` + tv + `)\.)`, prefix: "mongo.", substr: ".cmd."},
	// cluster.[<route_target_cluster>.]grpc.[<grpc_service>.](<grpc_method>.)<base_stat>
	{name: "proxy.grpc_bridge_method", pattern: `^cluster\.` + tv + `\.grpc\.` + tv + `\.((` + tv + `)\.)`, prefix: "cluster.", substr: ".grpc."},
	// http.[<stat_prefix>.]user_agent.(<user_agent>.)<base_stat>
	{name: "proxy.http_user_agent", pattern: `^http\.` + tv + `\.user_agent\.((` + tv + `)\.)`, prefix: "http.", substr: ".user_agent."},
	// vhost.[<virtual host name>.]vcluster.(<virtual_cluster_name>.)<base_stat>
	{name: "proxy.virtual_cluster", pattern: `^vhost\.` + tv + `\.vcluster\.((` + tv + `)\.)`, prefix: "vhost.", substr: ".vcluster."},
	// http.[<stat_prefix>.]fault.(<downstream_cluster>.)<base_stat>
	{name: "proxy.fault_downstream_cluster", pattern: `^http\.` + tv + `\.fault\.((` + tv + `)\.)`, prefix: "http.", substr: ".fault."},
	// listener.[<address>.]ssl.ciphers.(<cipher>)
	{name: "proxy.ssl_cipher", pattern: `^listener\..*?\.ssl\.ciphers(\.(` + tv + `))$`, prefix: "listener.", substr: ".ssl.ciphers."},
	// (listener|cluster).[<name>.]ssl.curves.(<curve>)
	{name: "proxy.ssl_curve", pattern: `^(?:listener|cluster)\..*?\.ssl\.curves(\.(` + tv + `))$`, substr: ".ssl.curves."},
	// (listener|cluster).[<name>.]ssl.sigalgs.(<sigalg>)
	{name: "proxy.ssl_sigalg", pattern: `^(?:listener|cluster)\..*?\.ssl\.sigalgs(\.(` + tv + `))$`, substr: ".ssl.sigalgs."},
	// (listener|cluster).[<name>.]ssl.versions.(<version>)
	{name: "proxy.ssl_version", pattern: `^(?:listener|cluster)\..*?\.ssl\.versions(\.(` + tv + `))$`, substr: ".ssl.versions."},
	// cluster.[<cluster_name>.]ssl.ciphers.(<cipher>)
	{name: "cipher_suite", pattern: `^cluster\.` + tv + `\.ssl\.ciphers(\.(` + tv + `))$`, prefix: "cluster.", substr: ".ssl.ciphers."},
	// cluster.[<route_target_cluster>.]grpc.(<grpc_service>.)*
	{name: "proxy.grpc_bridge_service", pattern: `^cluster\.` + tv + `\.grpc\.((` + tv + `)\.)`, prefix: "cluster.", substr: ".grpc."},
	// tcp.(<stat_prefix>.)<base_stat>
	{name: "proxy.tcp_prefix", pattern: `^tcp\.((` + tv + `)\.)`, prefix: "tcp."},
	// udp.(<stat_prefix>.)<base_stat>
	{name: "proxy.udp_prefix", pattern: `^udp\.((` + tv + `)\.)`, prefix: "udp."},
	// auth.clientssl.(<stat_prefix>.)<base_stat>
	{name: "proxy.clientssl_prefix", pattern: `^auth\.clientssl\.((` + tv + `)\.)`, prefix: "auth.clientssl."},
	// ratelimit.(<stat_prefix>.)<base_stat>
	{name: "proxy.ratelimit_prefix", pattern: `^ratelimit\.((` + tv + `)\.)`, prefix: "ratelimit."},
	// cluster.(<cluster_name>.)*
	{name: "proxy.cluster_name", pattern: `^cluster\.((` + tv + `)\.)`, prefix: "cluster."},
	// listener.[<address>.]http.(<stat_prefix>.)*
	{name: "proxy.http_conn_manager_prefix", pattern: `^listener\..*?\.http\.((` + tv + `)\.)`, prefix: "listener.", substr: ".http."},
	// cluster.[<cluster>.]ext_authz.(<ext_authz_prefix>.)*
	{name: "proxy.ext_authz_prefix", pattern: `^cluster\.` + tv + `\.ext_authz\.((` + tv + `)\.)`, prefix: "cluster.", substr: ".ext_authz."},
	// http.[<stat_prefix>.]ext_authz.(<ext_authz_prefix>.)*
	{name: "proxy.ext_authz_prefix", pattern: `^http\.` + tv + `\.ext_authz\.((` + tv + `)\.)`, prefix: "http.", substr: ".ext_authz."},
	// http.(<stat_prefix>.)*
	{name: "proxy.http_conn_manager_prefix", pattern: `^http\.((` + tv + `)\.)`, prefix: "http."},
	// (listener.[<address>.]|server.|listener_manager.)(worker_<id>.)*
	{name: "proxy.worker_id", pattern: `^(?:listener\..*?|server|listener_manager)\.((worker_\d+)\.)`, substr: ".worker_"},
	// listener.(<address>.)*, where the address is a dotted IPv4 address
	// and port, a bracketed IPv6 address and port, or any token but admin
	{name: "proxy.listener_address", pattern: `^listener\.((\d+\.\d+\.\d+\.\d+_\d+|\[[^\]]*\]_\d+|` + tv + `)\.)`, prefix: "listener.", exclude: "admin"},
	// vhost.(<virtual host name>.)*
	{name: "proxy.virtual_host", pattern: `^vhost\.((` + tv + `)\.)`, prefix: "vhost."},
	// mongo.(<stat_prefix>.)*
	{name: "proxy.mongo_prefix", pattern: `^mongo\.((` + tv + `)\.)`, prefix: "mongo."},
	// http.[<stat_prefix>.]rds.(<route_config_name>.)<base_stat>
	{name: "proxy.rds_route_config", pattern: `^http\.` + tv + `\.rds\.(([\w\-\./]+)\.)\w+?$`, prefix: "http.", substr: ".rds."},
	// vhost.[<virtual host name>.]route.(<route_stat_prefix>.)*
	{name: "proxy.route", pattern: `^vhost\.` + tv + `\.route\.((` + tv + `)\.)`, prefix: "vhost.", substr: ".route."},
	// thrift.(<stat_prefix>.)*
	{name: "proxy.thrift_prefix", pattern: `^thrift\.((` + tv + `)\.)`, prefix: "thrift."},
	// redis.(<stat_prefix>.)*
	{name: "proxy.redis_prefix", pattern: `^redis\.((` + tv + `)\.)`, prefix: "redis."},
	// (<stat_prefix>.)http_local_rate_limit.*
	{name: "proxy.local_http_ratelimit_prefix", pattern: `^((` + tv + `)\.)http_local_rate_limit\.`, substr: ".http_local_rate_limit."},
	// local_rate_limit.(<stat_prefix>.)*
	{name: "proxy.local_network_ratelimit_prefix", pattern: `^local_rate_limit\.((` + tv + `)\.)`, prefix: "local_rate_limit."},
	// listener_local_ratelimit.(<stat_prefix>.)*
	{name: "proxy.local_listener_ratelimit_prefix", pattern: `^listener_local_ratelimit\.((` + tv + `)\.)`, prefix: "listener_local_ratelimit."},
	// dns_filter.(<stat_prefix>.)*
	{name: "proxy.dns_filter_prefix", pattern: `^dns_filter\.((` + tv + `)\.)`, prefix: "dns_filter."},
	// connection_limit.(<stat_prefix>.)*
	{name: "proxy.connection_limit_prefix", pattern: `^connection_limit\.((` + tv + `)\.)`, prefix: "connection_limit."},
	// proxy_proto.[<stat_prefix>.](versions.v<version>.)<base_stat>
	{name: "proxy.proxy_protocol_version", pattern: `^proxy_proto\.(?:` + tv + `\.)?(versions\.v(\d)\.)\w+$`, prefix: "proxy_proto.", substr: ".versions.v"},
	// proxy_proto.(<stat_prefix>.)*, where the prefix is not the versions
	// of the unprefixed stats
	{name: "proxy.proxy_protocol_prefix", pattern: `^proxy_proto\.((` + tv + `)\.)`, prefix: "proxy_proto.", exclude: "versions"},
}
