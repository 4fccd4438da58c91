// Package cluster is the cluster manager: it builds the upstream clusters
// of the configuration (STATIC, and STRICT_DNS and LOGICAL_DNS whose hosts
// package dnscluster keeps following the DNS), chooses hosts with the load
// balancers of package lb, and owns the connection pools that carry
// requests to them (HTTP/1.1 per host, HTTP/2 per cluster). A *Cluster
// has exactly the methods the connection manager's UpstreamCluster
// interface asks for, without importing it; the server adapts the one to
// the other.
//
// Each cluster enforces its circuit-breaker thresholds (resources.go): the
// pools count connections, pending and active requests against them.
package cluster
