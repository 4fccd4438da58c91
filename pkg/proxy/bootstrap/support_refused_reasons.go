package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// refusedWhy says why some fields outside TLS are refused, where "not
// supported" alone would leave the reader guessing: Go, or the libraries
// Outrigger is built on, have nothing that would do what Envoy does.
var refusedWhy = map[protoreflect.FullName]string{
	"envoy.config.cluster.v3.Cluster.PreconnectPolicy.predictive_preconnect_ratio": "not supported by Outrigger: " +
		"Envoy's predictive preconnecting opens connections on the hosts its balancer would pick next, which " +
		"Outrigger's balancers do not predict; per_upstream_preconnect_ratio is supported",
	"envoy.config.cluster.v3.TrackClusterStats.per_endpoint_stats": "not supported by Outrigger: " +
		"Envoy renders its per-endpoint stats (cluster.<name>.endpoint.<address>.*) from the live hosts at each " +
		"/stats, /stats/prometheus and sink flush, where Outrigger's renderers read only its stat store, which keeps " +
		"a stat once made; timeout_budgets and request_response_sizes are supported",
	"envoy.config.cluster.v3.CircuitBreakers.Thresholds.max_connection_pools": "not supported by Outrigger: " +
		"Envoy's limit counts the connection pools its workers make on demand per host, protocol and socket " +
		"options and free when idle; Outrigger's HTTP/1.1 pools are one per host, made with the host set, and its " +
		"HTTP/2 connections Go's transport's, so there is nothing for the limit to count",
	"envoy.config.cluster.v3.Cluster.connection_pool_per_downstream_connection": "not supported by Outrigger: " +
		"Envoy then makes a connection pool for each downstream connection and closes it with that connection; " +
		"Outrigger's HTTP/1.1 pools are one per host and its HTTP/2 connections Go's transport's",
	"envoy.config.bootstrap.v3.Bootstrap.enable_dispatcher_stats": "not supported by Outrigger: " +
		"Envoy's dispatcher stats time each turn of a worker's event loop (loop_duration_us) and the lateness of its " +
		"polls (poll_delay_us); Outrigger's workers are goroutines scheduled by the Go runtime, with no event loop " +
		"whose turns could be measured",
	"envoy.config.metrics.v3.HistogramBucketSettings.bins": "not supported by Outrigger: " +
		"the circllhist library Outrigger records histograms with (circonusllhist) allocates a fixed 100 bins and " +
		"grows as needed; it takes no initial size",
	"envoy.extensions.filters.network.ext_authz.v3.ExtAuthz.send_tls_alert_on_denial": "not supported by Outrigger: " +
		"Go's crypto/tls sends no alert of the application's choosing once the handshake is done, so a denied " +
		"connection is closed without the access_denied alert Envoy sends",
	"envoy.extensions.filters.http.lua.v3.Lua.package_cpaths": "not supported by Outrigger: " +
		"gopher-lua, the Lua Outrigger runs, cannot load C modules; package_paths (Lua modules) are supported",
	"envoy.extensions.filters.http.lua.v3.LuaPerRoute.package_cpaths": "not supported by Outrigger: " +
		"gopher-lua, the Lua Outrigger runs, cannot load C modules; package_paths (Lua modules) are supported",
	"envoy.config.rbac.v3.RBAC.audit_logging_options": notInEnvoy + ": Envoy's RBAC filters never call an audit " +
		"logger; the audit loggers (envoy.rbac.audit_loggers.stream, a JSON line on stdout per decision) are gRPC's",
	"envoy.extensions.filters.network.set_filter_state.v3.Config.on_downstream_data": "not supported by Outrigger: " +
		"its network filters run once per connection, before the terminal filter reads, and none is called again " +
		"on the first bytes; on_new_connection and on_downstream_tls_handshake are supported",
	"envoy.extensions.filters.listener.original_src.v3.OriginalSrc.bind_port": "not supported by Outrigger: " +
		"Envoy's API hides it as not implemented and Envoy ignores it; the client's address without its port " +
		"(mark too) is supported",
}
