// Package udpfilter is the UDP listener filter interface, in the style of
// Envoy's UdpListenerReadFilter: a UDP listener has no filter chains; its
// listener_filters are UDP listener filters (the category
// envoy.filters.udp_listener), each of which sees every datagram the
// listener's socket receives and may send datagrams back from that socket.
// Each compiles its configuration once, with a Factory, into a Filter the
// listener runs for as long as it listens.
package udpfilter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Category is Envoy's extension category of UDP listener filters.
const Category = "envoy.filters.udp_listener"

// Factory compiles a UDP listener filter's configuration (its
// typed_config message). Errors name the field path below typed_config.
type Factory interface {
	Compile(config proto.Message, ctx Context) (Filter, error)
}

// Context is what UDP listener filters get from the server.
type Context struct {
	// Stats is the server's stat store.
	Stats *stats.Store
	// Log is the filter's component logger.
	Log logr.Logger
	// Clusters finds upstream clusters by name.
	Clusters Clusters
	// AccessLogs compiles an access_log list with the server's access
	// loggers; errors name the field path from prefix.
	AccessLogs func(prefix string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error)
	// Now is the clock of recorded times; nil means time.Now.
	Now func() time.Time
	// Extensions is the server's extension registry, in which the UDP
	// proxy finds its session filters; nil when there is none.
	Extensions *extension.Registry
	// LookupByName reports whether extensions may be found by name (see
	// extension.LookupByName).
	LookupByName bool
}

// Datagram is one datagram a UDP listener received.
type Datagram struct {
	// Socket is the listener socket it came in on, which replies leave
	// from.
	Socket Socket
	// Local is the socket's bound address, Peer the sender's.
	Local, Peer netip.AddrPort
	// Data is the payload; it is only valid during OnDatagram.
	Data []byte
}

// Socket is a listener's socket as filters see it.
type Socket interface {
	// WriteTo sends one datagram to peer.
	WriteTo(b []byte, peer netip.AddrPort) error
}

// Filter is a compiled UDP listener filter.
type Filter interface {
	// OnDatagram handles one datagram, on the socket's read goroutine: it
	// must not block for long.
	OnDatagram(d Datagram)
	// OnReceiveError is told of a failed read on the listener's socket.
	OnReceiveError()
	// Close ends the filter's work at once (its sessions end, as Envoy's
	// end with their listener); it is idempotent.
	Close() error
	// Shutdown closes the filter and waits, until ctx ends at the latest,
	// for what it runs to be gone.
	Shutdown(ctx context.Context) error
}

// Clusters finds the cluster a filter sends datagrams to.
type Clusters interface {
	// Cluster returns the named cluster, or nil when there is none.
	Cluster(name string) Cluster
}

// Cluster is what a UDP filter needs of an upstream cluster.
type Cluster interface {
	Name() string
	// ObservabilityName is the name of the cluster's stat scope.
	ObservabilityName() string
	// PickHost chooses a host with the cluster's load balancer, or nil
	// (counted in upstream_cx_none_healthy) when none can take traffic.
	PickHost(pc *upstream.PickContext) *upstream.Host
	// AcquireSession takes a unit of the max_connections circuit breaker
	// for a session; false (counted in upstream_cx_overflow) at the
	// limit. ReleaseSession gives it back.
	AcquireSession() bool
	ReleaseSession()
	// HostsVersion changes (by ==) whenever the cluster's hosts do;
	// HasHost reports whether a host of the address is among them.
	HostsVersion() any
	HasHost(address string) bool
}

// TunnelCluster is a Cluster that also carries HTTP/2 streams, as the
// UDP proxy's tunnels (tunneling_config) need.
type TunnelCluster interface {
	Cluster
	upstream.H2RoundTripper
	// HTTP2 reports whether the cluster speaks HTTP/2 to its hosts.
	HTTP2() bool
}

// DefaultMaxDatagramSize is the largest datagram a UDP socket reads when
// max_rx_datagram_size is unset (Envoy's DEFAULT_UDP_MAX_DATAGRAM_SIZE).
const DefaultMaxDatagramSize = 1500

// maxDatagramLimit is the largest UDP payload there can be.
const maxDatagramLimit = 65535

// CompileSocketConfig reads a UdpSocketConfig (a UDP listener's
// downstream_socket_config, a UDP proxy's upstream_socket_config): the
// largest datagram read, max_rx_datagram_size. prefer_gro is refused: Go's
// sockets read one datagram at a time. Errors name the field below the
// message.
func CompileSocketConfig(sc *corev3.UdpSocketConfig) (int, error) {
	n := DefaultMaxDatagramSize
	var errs []error
	if v := sc.GetMaxRxDatagramSize(); v != nil {
		if v.GetValue() == 0 || v.GetValue() > maxDatagramLimit {
			errs = append(errs, fmt.Errorf("max_rx_datagram_size: must be between 1 and %d", maxDatagramLimit))
		} else {
			n = int(v.GetValue())
		}
	}
	if sc.GetPreferGro().GetValue() {
		errs = append(errs, errors.New("prefer_gro: not supported by Outrigger (datagrams are read one at a time, without UDP GRO)"))
	}
	return n, errors.Join(errs...)
}
