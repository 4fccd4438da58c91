package extproc

import (
	"errors"

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
	if mo.GetClusterMetadataForwardingNamespaces() != nil {
		return errors.New("metadata_options.cluster_metadata_forwarding_namespaces: not supported by Outrigger")
	}
	if len(mo.GetReceivingNamespaces().GetTyped()) > 0 {
		return errors.New("metadata_options.receiving_namespaces.typed: not supported by Outrigger (Envoy ignores it too)")
	}
	return nil
}

// compileMetadataOptions is a filter's MetadataOptions.
func compileMetadataOptions(mo *extprocv3.MetadataOptions) (metadataNamespaces, error) {
	if err := checkMetadataOptions(mo); err != nil {
		return metadataNamespaces{}, err
	}
	return metadataNamespaces{
		forward: namespaces{untyped: mo.GetForwardingNamespaces().GetUntyped(), typed: mo.GetForwardingNamespaces().GetTyped()},
		receive: namespaces{untyped: mo.GetReceivingNamespaces().GetUntyped()},
	}, nil
}
