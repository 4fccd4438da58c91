// Package lb holds the load balancers: how a cluster chooses the host of
// each request. The layers mirror Envoy's:
//
//   - a Picker chooses within one list of hosts, by the cluster's Policy:
//     RoundRobin (plain round robin when every weight is equal, Envoy's
//     earliest-deadline-first weighted round robin otherwise), least
//     request (power of N choices on the hosts' active requests, or the
//     weighted schedule with weights divided by their active requests),
//     random, and the consistent hashes Ring (ring hash) and Maglev, which
//     route on the pick's hash key (upstream.PickContext.RequestHash) and
//     pick at random without one; round robin and least request ramp up
//     the hosts in slow start;
//   - a Balancer spreads the load over priority levels by their health
//     (overprovisioning factor, spill-over to lower priorities, degraded
//     hosts, panic mode). Within the chosen level it may choose a
//     locality first: by locality weight and availability
//     (locality-weighted balancing, locality.go), or at priority 0 by
//     the local cluster's spread over zones (zone-aware routing,
//     zone.go); then it asks a Picker. With a hash-based policy the hash
//     key chooses the level too;
//   - a SubsetBalancer (subset.go) divides the hosts into subsets by
//     their metadata, each with a Balancer of its own, and picks the
//     subset a request's metadata_match criteria name, or a fallback.
//
// A Policy is compiled from a cluster's lb_policy and its configuration
// (ForCluster), or from the typed load_balancing_policy, whose policies
// are extensions of the category envoy.load_balancing_policies (the
// Factory types, registered in package builtin).
//
// Everything here is built once from an immutable host list and then only
// read, so picking is allocation-free and takes at most a tiny lock. A
// change of hosts or health builds a new Balancer that the cluster swaps in.
package lb
