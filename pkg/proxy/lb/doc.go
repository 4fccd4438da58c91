// Package lb holds the load balancers: how a cluster chooses the host of
// each request. The layers mirror Envoy's:
//
//   - a Picker chooses within one list of hosts (RoundRobin: plain round
//     robin when every weight is equal, Envoy's earliest-deadline-first
//     weighted round robin otherwise);
//   - a Balancer spreads the load over priority levels by their health
//     (overprovisioning factor, spill-over to lower priorities, degraded
//     hosts, panic mode). Within the chosen level it may choose a
//     locality first: by locality weight and availability
//     (locality-weighted balancing, locality.go), or at priority 0 by
//     the local cluster's spread over zones (zone-aware routing,
//     zone.go); then it asks a Picker;
//   - a SubsetBalancer (subset.go) divides the hosts into subsets by
//     their metadata, each with a Balancer of its own, and picks the
//     subset a request's metadata_match criteria name, or a fallback.
//
// Everything here is built once from an immutable host list and then only
// read, so picking is allocation-free and takes at most a tiny lock. A
// change of hosts or health builds a new Balancer that the cluster swaps in.
package lb
