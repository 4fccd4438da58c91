package bootstrap

import (
	"errors"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ValidateCluster checks one cluster from discovery with the rules of a
// static cluster: its constraints and the support table, errors relative
// to the cluster. What the cluster manager checks when it builds the
// cluster is its own business.
func ValidateCluster(c *clusterv3.Cluster, ext *extension.Registry) error {
	if c == nil {
		return &FieldError{Reason: "no cluster"}
	}
	return errors.Join(constraintAndSupportErrors(c, ext)...)
}
