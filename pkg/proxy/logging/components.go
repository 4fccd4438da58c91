package logging

import "slices"

// componentNames are the logger (component) names, in the order /logging
// lists them. They are Envoy's names, so --component-log-level values and
// /logging requests written for Envoy work unchanged (envoy_bug is spelled
// proxy_bug, like every identifier that carried the product name).
var componentNames = [...]string{
	"admin", "alternate_protocols_cache", "aws", "assert", "backtrace", "basic_auth",
	"cache_filter", "client", "config", "connection", "conn_handler", "decompression",
	"dns", "dubbo", "proxy_bug", "ext_authz", "ext_proc", "rocketmq", "file", "filter",
	"forward_proxy", "geolocation", "grpc", "happy_eyeballs", "hc", "health_checker",
	"http", "http2", "hystrix", "init", "io", "jwt", "kafka", "key_value_store", "lua",
	"main", "matcher", "misc", "mongo", "multi_connection", "oauth2", "quic",
	"quic_stream", "pool", "rate_limit_quota", "rbac", "rds", "redis", "router",
	"runtime", "stats", "secret", "tap", "testing", "thrift", "tracing", "upstream",
	"udp", "wasm", "websocket", "golang",
}

// ComponentNames returns the component logger names in listing order.
func ComponentNames() []string { return slices.Clone(componentNames[:]) }

// IsComponent reports whether name is a known component logger.
func IsComponent(name string) bool { return slices.Contains(componentNames[:], name) }

// componentIndex is the position of a component in listing order, or -1.
func componentIndex(name string) int { return slices.Index(componentNames[:], name) }
