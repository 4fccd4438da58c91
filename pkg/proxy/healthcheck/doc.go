// Package healthcheck is active health checking of a cluster's hosts, as
// Envoy's: one session per host probes it on an interval (HTTP, TCP or
// gRPC), counts successes and failures against the thresholds, and sets
// the host's run-time health flags (upstream.FailedActiveHC and its
// companions). The cluster rebuilds its load balancer when a host's
// coarse health changes. Stats are Envoy's cluster.<name>.health_check.*,
// and transitions go to the event log as HealthCheckEvent JSON lines.
package healthcheck
