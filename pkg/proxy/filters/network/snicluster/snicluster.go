// Package snicluster is the sni_cluster network filter
// (envoy.filters.network.sni_cluster): it names the upstream cluster of a
// connection after the server name the client asked for (TLS SNI, found
// by the tls_inspector listener filter), through the connection's filter
// state (envoy.tcp_proxy.cluster), which tcp_proxy prefers to its own
// cluster. A connection without a server name keeps tcp_proxy's cluster.
package snicluster

import (
	"fmt"

	snicv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.sni_cluster"

// Factory compiles SniCluster configurations (it has no field).
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Compile implements netfilter.Factory.
func (Factory) Compile(msg proto.Message, _ netfilter.Context) (netfilter.Filter, error) {
	if _, ok := msg.(*snicv3.SniCluster); !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&snicv3.SniCluster{}), msg)
	}
	return Filter{}, nil
}

// Filter is the compiled filter; it keeps nothing.
type Filter struct{}

var _ netfilter.ReadFilter = Filter{}

// OnNewConnection implements netfilter.ReadFilter.
func (Filter) OnNewConnection(c netfilter.Conn) *netfilter.Refusal {
	sni := accesslog.RequestedServerName(c)
	if sni == "" {
		return nil
	}
	if fs, ok := c.(netfilter.FilterStater); ok {
		fs.SetFilterState(netfilter.ClusterStateKey, filterstate.String(sni))
	}
	return nil
}
