package cluster_test

import (
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// The scale benchmark is not part of the tier's run: it starts hundreds of
// sidecar processes (about 26 MB each). Run it with
//
//	OUTRIGGER_CLUSTER_BENCH=1 BENCH_PODS=200 BENCH_MAX_CONCURRENT=10 \
//	KUBEBUILDER_ASSETS=$PWD/bin/test-assets SIDECAR_BIN=$PWD/bin/sidecar CONTROLLER_BIN=$PWD/bin/controller \
//	go test -v -timeout 30m ./test/e2e/cluster/ -ginkgo.focus Scale
//
// It prints the time from creating the override to every tracked pod's
// sidecar holding the values, and the status writes it took.
var _ = Describe("Scale", func() {
	It("rolls an override out to BENCH_PODS real sidecars with BENCH_MAX_CONCURRENT", func(ctx SpecContext) {
		if os.Getenv("OUTRIGGER_CLUSTER_BENCH") == "" {
			Skip("a benchmark: set OUTRIGGER_CLUSTER_BENCH=1 to run it")
		}
		n, err := strconv.Atoi(envOr("BENCH_PODS", "200"))
		Expect(err).NotTo(HaveOccurred(), "BENCH_PODS")
		mc, err := strconv.Atoi(envOr("BENCH_MAX_CONCURRENT", "10"))
		Expect(err).NotTo(HaveOccurred(), "BENCH_MAX_CONCURRENT")
		Expect(n).To(BeNumerically(">=", 1))
		Expect(mc).To(And(BeNumerically(">=", 1), BeNumerically("<=", 256)))

		ns := cluster.namespace(ctx)
		setup := time.Now()
		pods := fleet(ctx, ns, "web", 0, n, true)
		GinkgoWriter.Printf("%d sidecars and pods ready in %s\n", n, time.Since(setup).Round(time.Second))
		tracked := pods[:min(n, v1alpha1.MaxTargets)]

		o := newOverride(ns, "scale", "web", int32(mc))
		writes := statusWrites(ctx, o, &v1alpha1.ProxyRuntimeOverrideList{})
		start := time.Now()
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			g.Expect(o.Status.Succeeded).To(Equal(int32(len(tracked))))
			g.Expect(meta.IsStatusConditionFalse(o.Status.Conditions, v1alpha1.ConditionProgressing)).To(BeTrue())
		}).WithTimeout(5 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		took := time.Since(start)
		Eventually(func(g Gomega) { holdsOverride(g, tracked) }).WithTimeout(30 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("BENCH pods=%d tracked=%d maxConcurrent=%d rollout=%s status-writes=%d\n",
			n, len(tracked), mc, took.Round(10*time.Millisecond), writes())
		AddReportEntry("rollout", took.String(), writes())

		deleteAndWait(ctx, o, 5*time.Minute)
		holdsNothing(tracked)
	})
})
