// Package builtin is the one list of the extensions Outrigger links in:
// what the configuration may name, what /server_info reports and what
// docs/extensions.md shows all come from Registry. Adding an extension is a
// package of its own and one line here.
package builtin

import (
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	connectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	fixedheapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/healthcheck"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
)

// Envoy's extension categories.
const (
	AccessLoggers      = "envoy.access_loggers"
	HTTPFilters        = "envoy.filters.http"
	NetworkFilters     = "envoy.filters.network"
	ResourceMonitors   = "envoy.resource_monitors"
	StatsSinks         = "envoy.stats_sinks"
	HTTPProtocolOption = "envoy.upstreams.http.http_protocol_options"
)

// Registry returns a new registry of every extension Outrigger implements,
// none disabled, sorted by category, then name. Referencing the config
// messages also links their packages in, which registers their types so
// that typed_config values of these types can be decoded.
func Registry() *extension.Registry {
	r, err := extension.New(
		extension.Of("proxy.access_loggers.file", AccessLoggers, &filev3.FileAccessLog{}, nil),

		extension.Of(healthcheck.Name, HTTPFilters, &healthcheckv3.HealthCheck{}, healthcheck.Factory{}),
		extension.Of(router.Name, HTTPFilters, &routerv3.Router{}, router.Factory{}),

		extension.Of("proxy.filters.network.http_connection_manager", NetworkFilters, &hcmv3.HttpConnectionManager{}, nil),

		extension.Of("proxy.resource_monitors.downstream_connections", ResourceMonitors, &connectionsv3.DownstreamConnectionsConfig{}, nil),
		extension.Of("proxy.resource_monitors.fixed_heap", ResourceMonitors, &fixedheapv3.FixedHeapConfig{}, nil),

		extension.Of("proxy.stat_sinks.dog_statsd", StatsSinks, &metricsv3.DogStatsdSink{}, nil),
		extension.Of("proxy.stat_sinks.hystrix", StatsSinks, &metricsv3.HystrixSink{}, nil),
		extension.Of("proxy.stat_sinks.statsd", StatsSinks, &metricsv3.StatsdSink{}, nil),

		extension.Of("proxy.upstreams.http.http_protocol_options", HTTPProtocolOption, &upstreamhttpv3.HttpProtocolOptions{}, nil),
	)
	if err != nil {
		// The list above is fixed: a duplicate is a programming error,
		// which the package's tests catch.
		panic(err)
	}
	return r
}
