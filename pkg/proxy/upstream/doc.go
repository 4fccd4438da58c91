// Package upstream is the shared vocabulary between the connection manager,
// the cluster manager and the load balancers: hosts, their per-host stats,
// pooled upstream connections and a cluster's request stats. It holds
// concrete types only and depends on nothing above the stats library, so
// every package of the data path can use it without importing another.
package upstream
