package server

import (
	"errors"
	"fmt"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// A *cluster.Cluster is what UDP listener filters (udp_proxy) need of a
// cluster.
var _ udpfilter.Cluster = (*cluster.Cluster)(nil)

// It carries the UDP proxy's HTTP/2 tunnels too.
var _ udpfilter.TunnelCluster = (*cluster.Cluster)(nil)

// udpClusters adapts the cluster manager to udpfilter.Clusters.
type udpClusters struct{ m *cluster.Manager }

// Cluster returns the named cluster, or a nil interface when there is none.
func (v udpClusters) Cluster(name string) udpfilter.Cluster {
	if v.m == nil {
		return nil
	}
	if c := v.m.Cluster(name); c != nil {
		return c
	}
	return nil
}

// buildUDPFilter builds one listener filter of a UDP listener, a UDP
// listener filter found by the type of its typed_config (or its name).
// Errors name the field below the filter.
func (s *Server) buildUDPFilter(f *listenerv3.ListenerFilter) (udpfilter.Filter, error) {
	ext, msg, err := s.ext.Resolve(extension.Ref{
		Kind: "UDP listener filter", Category: udpfilter.Category, Name: f.GetName(), Config: f.GetTypedConfig(),
	}, extension.LookupByName(runtimeValues{s.runtime}))
	if err != nil {
		return nil, err
	}
	factory, ok := ext.Factory.(udpfilter.Factory)
	if !ok {
		return nil, fmt.Errorf("typed_config: UDP listener filter %s is not supported by Outrigger", ext.Name)
	}
	uf, err := factory.Compile(msg, udpfilter.Context{
		Stats:        s.stats,
		Log:          s.logs.Logger("udp"),
		Clusters:     udpClusters{m: s.clusters},
		AccessLogs:   s.compileAccessLogs,
		Now:          s.clock,
		Extensions:   s.ext,
		LookupByName: extension.LookupByName(runtimeValues{s.runtime}),
	})
	if err != nil {
		return nil, errors.Join(listener.PrefixErrors("typed_config.", err)...)
	}
	return uf, nil
}
