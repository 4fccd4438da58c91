// Package cluster_test is the cluster test tier: a real kube-apiserver and
// etcd (envtest, from bin/test-assets), the CRDs applied, the controller
// binary running with the direct transport under the least-privilege role
// it ships with, and sidecar processes on distinct loopback addresses
// (127.0.0.2, 127.0.0.3, ...) standing in for pods' proxies. Pod objects
// are created with their status patched to Running, Ready and the
// sidecar's address as pod IP, as a kubelet would.
//
// Run it with `make test-cluster`, or
//
//	go build -o bin/sidecar ./cmd/sidecar && go build -o bin/controller ./cmd/controller &&
//	go build -o bin/kubectl-outrigger ./cmd/kubectl-outrigger &&
//	KUBEBUILDER_ASSETS=$PWD/bin/test-assets SIDECAR_BIN=$PWD/bin/sidecar \
//	CONTROLLER_BIN=$PWD/bin/controller PLUGIN_BIN=$PWD/bin/kubectl-outrigger go test ./test/e2e/cluster/
package cluster_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cluster tier")
}

// The suite's shared fixtures: one API server, one controller, for every
// spec. They are set once, in BeforeSuite.
var (
	cluster *clusterFixture
	ctl     *controllerProcess
	feats   features
)

var _ = BeforeSuite(func(ctx SpecContext) {
	cluster = startCluster()
	DeferCleanup(cluster.stop)
	feats = probeFeatures()
	ctl = startController(cluster)
	DeferCleanup(ctl.stop)
}, NodeTimeout(3*time.Minute))
