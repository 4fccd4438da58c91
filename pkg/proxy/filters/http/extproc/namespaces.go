package extproc

import (
	"errors"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
)

// namespaces is a MetadataNamespaces: dynamic metadata namespaces by
// kind.
type namespaces struct {
	untyped, typed []string
}

// metadataNamespaces are a MetadataOptions' namespaces: those forwarded
// to the processor, and those kept from its answers (untyped only).
type metadataNamespaces struct {
	forward, receive namespaces
}

// checkMetadataOptions refuses what Outrigger does not implement of a
// MetadataOptions; errors name the field below metadata_options.
func checkMetadataOptions(mo *extprocv3.MetadataOptions) error {
	if len(mo.GetReceivingNamespaces().GetTyped()) > 0 {
		return errors.New("metadata_options.receiving_namespaces.typed: not supported by Outrigger (Envoy ignores it too)")
	}
	return nil
}

// compileMetadataOptions is a filter's MetadataOptions, and its
// cluster_metadata_forwarding_namespaces.
func compileMetadataOptions(mo *extprocv3.MetadataOptions) (metadataNamespaces, namespaces, error) {
	if err := checkMetadataOptions(mo); err != nil {
		return metadataNamespaces{}, namespaces{}, err
	}
	cl := mo.GetClusterMetadataForwardingNamespaces()
	return metadataNamespaces{
		forward: namespaces{untyped: mo.GetForwardingNamespaces().GetUntyped(), typed: mo.GetForwardingNamespaces().GetTyped()},
		receive: namespaces{untyped: mo.GetReceivingNamespaces().GetUntyped()},
	}, namespaces{untyped: cl.GetUntyped(), typed: cl.GetTyped()}, nil
}

// metadataOf is a cluster that has metadata (the cluster manager's), as
// httpfilter.Services finds it.
type metadataOf interface {
	Metadata() *corev3.Metadata
}

// addClusterMetadata puts into md the namespaces of cluster
// cluster_metadata_forwarding_namespaces names that md does not have yet:
// the cluster's metadata is the least specific, the request's dynamic
// metadata of the same namespace wins.
func (c *config) addClusterMetadata(md *corev3.Metadata, cluster string) *corev3.Metadata {
	if cluster == "" || c.clusters == nil {
		return md
	}
	mo, ok := c.clusters.Cluster(cluster).(metadataOf)
	if !ok {
		return md
	}
	cm := mo.Metadata()
	for _, ns := range c.clusterNS.untyped {
		v, ok := cm.GetFilterMetadata()[ns]
		if !ok {
			continue
		}
		if md == nil {
			md = &corev3.Metadata{}
		}
		if _, has := md.GetFilterMetadata()[ns]; has {
			continue
		}
		if md.FilterMetadata == nil {
			md.FilterMetadata = map[string]*structpb.Struct{}
		}
		md.FilterMetadata[ns] = v
	}
	for _, ns := range c.clusterNS.typed {
		v, ok := cm.GetTypedFilterMetadata()[ns]
		if !ok {
			continue
		}
		if md == nil {
			md = &corev3.Metadata{}
		}
		if _, has := md.GetTypedFilterMetadata()[ns]; has {
			continue
		}
		if md.TypedFilterMetadata == nil {
			md.TypedFilterMetadata = map[string]*anypb.Any{}
		}
		md.TypedFilterMetadata[ns] = v
	}
	return md
}
