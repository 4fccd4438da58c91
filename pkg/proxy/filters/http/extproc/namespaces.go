package extproc

import (
	"errors"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

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
	cm, out := mo.Metadata(), md
	if out == nil {
		out = &corev3.Metadata{}
	}
	addMissing(&out.FilterMetadata, cm.GetFilterMetadata(), c.clusterNS.untyped)
	addMissing(&out.TypedFilterMetadata, cm.GetTypedFilterMetadata(), c.clusterNS.typed)
	if md == nil && out.FilterMetadata == nil && out.TypedFilterMetadata == nil {
		// Nothing to send, as without the option.
		return nil
	}
	return out
}

// addMissing copies into *dst the namespaces of names that src has and
// *dst does not, making *dst when it needs one.
func addMissing[V any](dst *map[string]V, src map[string]V, names []string) {
	for _, ns := range names {
		v, ok := src[ns]
		if !ok {
			continue
		}
		if _, has := (*dst)[ns]; has {
			continue
		}
		if *dst == nil {
			*dst = map[string]V{}
		}
		(*dst)[ns] = v
	}
}
