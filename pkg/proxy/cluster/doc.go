// Package cluster is the cluster manager: it builds the upstream clusters
// of the configuration (STATIC, and STRICT_DNS and LOGICAL_DNS whose hosts
// package dnscluster keeps following the DNS), chooses hosts with the load
// balancers of package lb, and owns the connection pools that carry
// requests to them (HTTP/1.1 per host, HTTP/2 per cluster). A *Cluster
// has exactly the methods the connection manager's UpstreamCluster
// interface asks for, without importing it; the server adapts the one to
// the other.
//
// Circuit-breaker thresholds are parsed and shown but not enforced yet:
// Cluster.Thresholds is the seam where enforcement will read them.
package cluster
