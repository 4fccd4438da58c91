// Package dnscluster is the DNS cluster kind: STRICT_DNS (every address
// of every endpoint is a host; the hosts follow the answers) and
// LOGICAL_DNS (one host, the first address of the answer, replaced when
// the answer changes), with Envoy's refresh, TTL, jitter and failure
// back-off rules and its update_* stats. A Discovery resolves on its own
// goroutines and publishes each new host set to the cluster, whose
// requests never wait for the DNS.
package dnscluster
