// Package dns resolves host names for DNS clusters: Envoy's DNS resolver
// extensions (category envoy.network.dns_resolver), their configuration
// and the choice between a cluster's own resolver and the server's.
//
// Cares behaves as Envoy's c-ares resolver: the hosts file, then the
// nameservers (the configured ones or resolv.conf's) over UDP, TCP when an
// answer is truncated or when asked, the search domains, a bounded number
// of attempts per nameserver within the query timeout, the lookup families
// of Envoy (AUTO, V4_PREFERRED, V4_ONLY, V6_ONLY, ALL), the TTL of each
// answer, and Envoy's dns.cares.* stats. GetAddrInfo uses the system's way
// (Go's resolver reading the same files), as Envoy's getaddrinfo resolver.
//
// Resolvers block the goroutine that asks, never a worker: DNS clusters
// resolve on goroutines of their own and publish the hosts they find.
package dns
