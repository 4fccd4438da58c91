package dns

import (
	"context"
	"net/netip"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// Family is the DNS lookup family: which address families a resolution
// asks for, and in what order (Envoy's Network::DnsLookupFamily).
type Family uint8

const (
	// Auto asks for IPv6 addresses first and, when there are none, IPv4
	// (Envoy's default for a cluster's dns_lookup_family).
	Auto Family = iota
	// V4Only asks for IPv4 addresses only.
	V4Only
	// V6Only asks for IPv6 addresses only.
	V6Only
	// V4Preferred asks for IPv4 addresses first and, when there are none,
	// IPv6.
	V4Preferred
	// All asks for both families at once and returns every address.
	All
)

// String is the family's configuration name.
func (f Family) String() string {
	switch f {
	case V4Only:
		return "V4_ONLY"
	case V6Only:
		return "V6_ONLY"
	case V4Preferred:
		return "V4_PREFERRED"
	case All:
		return "ALL"
	default:
		return "AUTO"
	}
}

// FamilyFromCluster converts a cluster's dns_lookup_family. Values the API
// does not define read as AUTO, the field's default.
func FamilyFromCluster(f clusterv3.Cluster_DnsLookupFamily) Family {
	switch f {
	case clusterv3.Cluster_V4_ONLY:
		return V4Only
	case clusterv3.Cluster_V6_ONLY:
		return V6Only
	case clusterv3.Cluster_V4_PREFERRED:
		return V4Preferred
	case clusterv3.Cluster_ALL:
		return All
	default:
		return Auto
	}
}

// Status is how a resolution ended, as Envoy's DNS clusters see it.
type Status uint8

const (
	// Completed: the DNS answered. The address list may be empty (the
	// name does not exist, or has no address of the family asked for).
	Completed Status = iota
	// Failed: no usable answer (timeouts, refused or failing servers,
	// malformed responses). A DNS cluster keeps its hosts.
	Failed
)

// Address is one resolved address and how long it may be cached.
type Address struct {
	IP  netip.Addr
	TTL time.Duration
}

// Result is the outcome of one resolution.
type Result struct {
	Status Status
	// Addresses in the order the resolver returned them, without
	// duplicates.
	Addresses []Address
	// Details says why a resolution failed or came back empty, for logs.
	Details string
}

// Resolver resolves host names. Resolve blocks until the resolution ends,
// within the resolver's own timeouts, or ctx ends (then the result is
// Failed); callers run it on their own goroutine, never on a worker's. It
// is safe for concurrent use.
type Resolver interface {
	Resolve(ctx context.Context, name string, family Family) Result
}

// normalizeName lower-cases a name for comparisons; DNS names are
// case-insensitive.
func normalizeName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}
