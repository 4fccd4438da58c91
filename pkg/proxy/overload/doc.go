// Package overload is the proxy's overload manager, configured by the
// bootstrap's overload_manager as Envoy's is.
//
// Resource monitors report a pressure (1 is the configured maximum):
// envoy.resource_monitors.fixed_heap is polled every refresh_interval and
// reads the Go heap in use; envoy.resource_monitors.global_downstream_max_connections
// is a "proactive" resource, counted by the listeners as they accept and
// close connections, and checked at accept time. Triggers (threshold and
// scaled) turn pressures into action states between 0 (inactive) and 1
// (saturated), and the actions take effect where the listeners and the
// HTTP connection manager consult the Manager: stop_accepting_connections
// pauses the accept loops, reject_incoming_connections closes a share of
// new connections, stop_accepting_requests refuses a share of requests,
// disable_http_keepalive closes a share of connections after their
// response, reduce_timeouts shortens idle timeouts, and shrink_heap returns
// free memory to the operating system.
//
// The Manager also enforces the global downstream connection limit, from
// the monitor or, without it, from the older runtime key
// overload.global_downstream_max_connections. The admin listener counts
// against it as Envoy's does, unless the bootstrap's
// admin.ignore_global_conn_limit keeps it out; no overload action applies
// to it.
package overload
