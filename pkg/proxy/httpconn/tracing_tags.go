package httpconn

import (
	"sync/atomic"
	"unsafe"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// constTags are the tags every sampled span of a connection manager has
// with the same values, prepared once (tracing.PrepareTags): a driver
// that encodes its tags the same way each time (OpenTelemetry) then
// copies their encoding rather than encoding them per span. Only runs of
// tags pay: http.protocol alone, prepared, cost a span more than it saved
// (adding the run and copying it cost about what encoding the tag did).
type constTags struct {
	// node is node_id and zone; component is component alone, for a
	// span with no cluster.
	node, component *tracing.PreparedTags
	// clusters are the component and upstream_cluster tags of recent
	// clusters, by a hash of their names' addresses (addCluster).
	clusters [clusterTagSlots]atomic.Pointer[clusterTags]
	driver   tracing.Driver
}

// clusterTags are the component, upstream_cluster and
// upstream_cluster.name tags of the cluster named name.
type clusterTags struct {
	name string
	tags *tracing.PreparedTags
}

// clusterTagSlots bounds the clusters whose tags are kept; a cluster
// whose slot another holds prepares its tags again (a small allocation
// per sampled span while both are busy).
const clusterTagSlots = 16

// newConstTags prepares the tags of d's spans.
func newConstTags(d tracing.Driver, nodeID, zone string) *constTags {
	return &constTags{
		node:      tracing.PrepareTags(d, tracing.Tag{Key: "node_id", Value: nodeID}, tracing.Tag{Key: "zone", Value: zone}),
		component: tracing.PrepareTags(d, tracing.Tag{Key: "component", Value: "proxy"}),
		driver:    d,
	}
}

// addCommon adds the component tag and, with a cluster named name, the
// upstream_cluster and upstream_cluster.name tags. A cluster keeps its
// name's string, so its address finds the cluster's tags without
// comparing bytes.
func (c *constTags) addCommon(sp *tracing.Span, cl UpstreamCluster) {
	if cl == nil {
		sp.AddPreparedTags(c.component)
		return
	}
	name := cl.Name()
	p := unsafe.StringData(name)
	slot := &c.clusters[(uintptr(unsafe.Pointer(p))>>4)%clusterTagSlots]
	ct := slot.Load()
	if ct == nil || unsafe.StringData(ct.name) != p || len(ct.name) != len(name) {
		ct = &clusterTags{name: name, tags: tracing.PrepareTags(c.driver,
			tracing.Tag{Key: "component", Value: "proxy"},
			tracing.Tag{Key: "upstream_cluster", Value: name},
			tracing.Tag{Key: "upstream_cluster.name", Value: name})}
		slot.Store(ct)
	}
	sp.AddPreparedTags(ct.tags)
}
