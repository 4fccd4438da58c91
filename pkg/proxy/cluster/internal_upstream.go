package cluster

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	iuv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// internalUpstream is a compiled internal_upstream transport socket
// (Envoy's InternalUpstreamTransport): the metadata namespaces of the
// host or the cluster that each connection to an internal listener hands
// the listener's connection as its dynamic metadata.
type internalUpstream struct {
	sources []passthroughSource
	// noMetadata counts the namespaces a connection found missing:
	// internal_upstream.no_metadata.
	noMetadata *stats.Counter
}

// passthroughSource is one passthrough_metadata entry: the namespace
// name of the host's metadata, or of the cluster's when cluster is set.
type passthroughSource struct {
	cluster bool
	name    string
}

// compileInternalUpstream compiles m, its counters under scope; field is
// the path of the transport socket.
func compileInternalUpstream(m *iuv3.InternalUpstreamTransport, scope stats.Scope, field string) (*internalUpstream, []error) {
	var errs []error
	iu := &internalUpstream{}
	for i, s := range m.GetPassthroughMetadata() {
		switch {
		case s.GetKind().GetHost() != nil:
			iu.sources = append(iu.sources, passthroughSource{name: s.GetName()})
		case s.GetKind().GetCluster() != nil:
			iu.sources = append(iu.sources, passthroughSource{cluster: true, name: s.GetName()})
		default:
			// Envoy throws "metadata type is not supported".
			errs = append(errs, configErrorf(fmt.Sprintf("%styped_config.passthrough_metadata[%d].kind", field, i), "metadata type is not supported: only host and cluster"))
		}
	}
	iu.noMetadata = scope.Scope("internal_upstream.").Counter("no_metadata")
	return iu, errs
}

// metadata is what a connection to h passes on: each source's namespace
// copied from h's metadata or the cluster's (clusterMD). A namespace
// missing counts in no_metadata. nil without sources, as in Envoy.
func (iu *internalUpstream) metadata(h *upstream.Host, clusterMD *corev3.Metadata) *corev3.Metadata {
	if iu == nil || len(iu.sources) == 0 {
		return nil
	}
	md := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{}}
	for _, s := range iu.sources {
		src := h.Metadata
		if s.cluster {
			src = clusterMD
		}
		if v, ok := src.GetFilterMetadata()[s.name]; ok {
			md.FilterMetadata[s.name] = v
		} else {
			iu.noMetadata.Inc()
		}
	}
	return md
}
