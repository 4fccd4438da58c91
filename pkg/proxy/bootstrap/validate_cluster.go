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
func ValidateCluster(c *clusterv3.Cluster, ext *extension.Registry) error {
	if c == nil {
		return &FieldError{Reason: "no cluster"}
	}
	errs := constraintAndSupportErrors(c, ext)
	s := semanticChecker{ext: ext}
	s.edsCluster(c, "", true)
	return errors.Join(append(errs, s.errs...)...)
}
