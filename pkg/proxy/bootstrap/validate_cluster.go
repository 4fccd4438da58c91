package bootstrap

import (
	"errors"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ValidateCluster checks one cluster from discovery (over the ADS stream)
// with the rules of a static cluster: its constraints, the support table
// and the EDS rules, errors relative to the cluster. What the cluster
// manager checks when it builds the cluster is its own business.
//
// A cluster of the plain shape (isPlainCluster, a few field reads) is
// known to pass the support check, so only its constraints are checked:
// the reflective walk would be most of the check's cost, paid by each of
// a large CDS response's clusters.
func ValidateCluster(c *clusterv3.Cluster, ext *extension.Registry) error {
	return validateCluster(c, ext, plainClusters)
}

// validateCluster is ValidateCluster, with the plain-shape shortcut only
// when plain is true.
func validateCluster(c *clusterv3.Cluster, ext *extension.Registry, plain bool) error {
	if c == nil {
		return &FieldError{Reason: "no cluster"}
	}
	var errs []error
	if isPlainCluster(c, plain) {
		if err := c.ValidateAll(); err != nil {
			errs = pgvFieldErrors(err, c.ProtoReflect().Descriptor(), "")
		}
	} else {
		errs = constraintAndSupportErrors(c, ext)
	}
	s := semanticChecker{ext: ext}
	s.edsCluster(c, "", true)
	return errors.Join(append(errs, s.errs...)...)
}
