// Package lb holds the load balancers: how a cluster chooses the host of
// each request. Two layers mirror Envoy's:
//
//   - a Picker chooses within one list of hosts (RoundRobin: plain round
//     robin when every weight is equal, Envoy's earliest-deadline-first
//     weighted round robin otherwise); least request, random, ring hash
//     and maglev are further Pickers to come;
//   - a Balancer spreads the load over priority levels by their health
//     (overprovisioning factor, spill-over to lower priorities, degraded
//     hosts, panic mode), then asks the chosen level's Picker.
//
// Everything here is built once from an immutable host list and then only
// read, so picking is allocation-free and takes at most a tiny lock. A
// change of hosts or health builds a new Balancer that the cluster swaps in.
package lb
