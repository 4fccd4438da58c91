// Package outlier is Envoy's outlier detection: passive health checking of
// a cluster's hosts from the results of the traffic sent to them.
//
// A Detector belongs to one cluster with outlier_detection. Each host of
// the cluster gets a Monitor (the upstream.OutlierMonitor the data path
// reports to): consecutive 5xx, gateway failures and local-origin failures
// eject a host at once; an interval timer evaluates success rates and
// failure percentages over the last interval, returns ejected hosts to
// service when their ejection time is over, and shortens the ejection
// time of hosts that stay healthy. Ejection sets the host's
// FailedOutlierCheck flag and asks the cluster to rebuild its load
// balancer.
package outlier
