package upstream

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Locality is where a host runs, as the configuration's locality says.
type Locality struct {
	Region  string
	Zone    string
	SubZone string
}

// Host is one endpoint of a cluster. Its identity fields are set when the
// cluster is built and never change afterwards; only Stats and the
// run-time health flags move.
type Host struct {
	// Address is what is dialled: "ip:port", "[ipv6]:port", or the path
	// of a pipe (a unix domain socket, see IsPipe).
	Address string
	// AdditionalAddresses are the endpoint's additional_addresses
	// ("ip:port"), nil without any: its connections race them with
	// Address (Happy Eyeballs). Read-only.
	AdditionalAddresses []string
	// Hostname is the endpoint's hostname field, "" when not configured.
	Hostname string
	// Cluster is the name of the cluster the host belongs to.
	Cluster string
	// Locality and Priority come from the locality_lb_endpoints entry.
	Locality Locality
	Priority uint32
	// Weight is the endpoint's load_balancing_weight (1 when unset).
	Weight uint32
	// LocalityWeight is the load_balancing_weight of the host's locality
	// in its priority level, 0 when unset: what locality-weighted
	// balancing weighs the locality by. When several
	// locality_lb_endpoints entries name the same locality and priority,
	// the last weight given applies to all of their hosts, as in Envoy.
	LocalityWeight uint32
	// Canary comes from the endpoint metadata (envoy.lb / canary: true).
	Canary bool
	// Metadata is the endpoint's metadata (%UPSTREAM_METADATA%); nil when
	// it has none. Read-only.
	Metadata *corev3.Metadata
	// LocalityMetadata is the metadata of the endpoint's
	// locality_lb_endpoints entry, nil when it has none: what
	// transport_socket_matches look at when the endpoint's own metadata
	// matches none of them. Read-only.
	LocalityMetadata *corev3.Metadata
	// Socket is the transport socket the host's connections use, which
	// the cluster chose when the host joined it (transport_socket_matches):
	// 0 for the cluster's transport_socket, i for its i-th match.
	Socket int
	// ConfigHealth is the health_status given in the configuration.
	// UNHEALTHY, DRAINING and TIMEOUT keep the host out of load balancing
	// and show it as /failed_eds_health in /clusters. The health set at
	// run time is in the host's flags (health.go).
	ConfigHealth corev3.HealthStatus
	// Created is when the host joined its cluster: the cluster sets it
	// when it first installs a host set holding the host, before any
	// pick sees it. Slow start applies to the hosts created after the
	// cluster's first host set.
	Created time.Time

	// HealthCheck is the endpoint's health_check_config, nil when it has
	// none (the checks go to Address, with the cluster's settings).
	// Read-only.
	HealthCheck *HostHealthCheck

	// Stats are the host's own counters, shown per host by /clusters.
	Stats HostStats

	// flags are the run-time HealthFlags (health.go).
	flags atomic.Uint32
	// outlier is the outlier-detection monitor, nil without
	// outlier_detection (outlier.go).
	outlier OutlierMonitor
}

// HostHealthCheck is an endpoint's health_check_config: where and how its
// active health checks differ from the cluster's.
type HostHealthCheck struct {
	// IP, when valid, is the address checks connect to instead of the
	// host's (health_check_config.address).
	IP netip.Addr
	// Port, when not 0, is the port checks connect to
	// (health_check_config.port_value), before the cluster's alt_port.
	Port uint16
	// Hostname, when not "", is the Host or :authority of the host's
	// HTTP and gRPC checks, before the cluster's host or authority.
	Hostname string
	// Disabled: the host is not checked at all
	// (disable_active_health_check); it counts as healthy to the checks.
	Disabled bool
}

// HostStats are the per-host counters and gauges that /clusters shows. They
// are plain atomics on the host, not entries of the stat store, as in Envoy.
type HostStats struct {
	CxTotal       atomic.Uint64
	CxConnectFail atomic.Uint64
	CxActive      atomic.Int64
	RqTotal       atomic.Uint64
	RqTimeout     atomic.Uint64
	RqSuccess     atomic.Uint64
	RqError       atomic.Uint64
	RqActive      atomic.Int64

	// latched is where the load reporter last read the counters (Latch).
	latched hostLatch
}

// IsPipe reports whether a host address is a pipe (a unix domain socket):
// an absolute path, or "@name" in Linux's abstract namespace. An
// "ip:port" never starts with either.
func IsPipe(address string) bool {
	return strings.HasPrefix(address, "/") || strings.HasPrefix(address, "@")
}
