package cluster_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

var _ = Describe("Errors", func() {
	DescribeTable("invalid specs are refused by the API server with a clear message",
		func(ctx SpecContext, obj client.Object, want string) {
			obj.SetNamespace(cluster.namespace(ctx))
			err := cluster.c.Create(ctx, obj)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("an empty selector",
			&v1alpha1.ProxyHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.ProxyHealthCheckSpec{State: v1alpha1.HealthCheckFail}},
			"an empty selector would select every pod of the namespace"),
		Entry("an unknown health-check state",
			&v1alpha1.ProxyHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.ProxyHealthCheckSpec{Target: selector("web"), State: "Sometimes"}},
			`Unsupported value: "Sometimes"`),
		Entry("an override that sets nothing",
			&v1alpha1.ProxyRuntimeOverride{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.ProxyRuntimeOverrideSpec{Target: selector("web")}},
			"set runtime or logging"),
		Entry("a ttl that would never be reverted",
			&v1alpha1.ProxyRuntimeOverride{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target: selector("web"), Runtime: map[string]string{"k": "v"}, OnDelete: v1alpha1.OnDeleteKeep, TTL: &metav1.Duration{Duration: time.Minute}}},
			"ttl needs onDelete: Revert"),
		Entry("a drain delay without failing health checks",
			&v1alpha1.ProxyDrain{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.ProxyDrainSpec{
				Target: selector("web"), HealthCheckFailDelay: &metav1.Duration{Duration: time.Second}}},
			"healthCheckFailDelay needs failHealthChecks: true"),
		Entry("maxConcurrent above the cap",
			&v1alpha1.ProxyDrain{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.ProxyDrainSpec{
				Target: selector("web"), Rollout: v1alpha1.Rollout{MaxConcurrent: 1000}}},
			"spec.rollout.maxConcurrent: Invalid value: 1000"),
	)

	It("reports an unreachable pod, retries it with backoff, and applies once it answers", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		up := startProxy()
		down := newProxy(feats.healthCheckFilter) // not started: nothing listens on its address
		DeferCleanup(down.stop)
		createPod(ctx, ns, "web-up", "web", up)
		createPod(ctx, ns, "web-down", "web", down)
		o := &v1alpha1.ProxyRuntimeOverride{
			ObjectMeta: metav1.ObjectMeta{Name: "tune", Namespace: ns},
			Spec:       v1alpha1.ProxyRuntimeOverrideSpec{Target: selector("web"), Runtime: map[string]string{"k": "v"}},
		}
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			deg := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionDegraded)
			g.Expect(deg).NotTo(BeNil())
			g.Expect(deg.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(deg.Reason).To(Equal(v1alpha1.ReasonAdminCallFailed))
			g.Expect(deg.Message).To(ContainSubstring("web-down: "))
			g.Expect(deg.Message).To(ContainSubstring("connection refused"))
			var t *v1alpha1.RuntimeOverrideTarget
			for i := range o.Status.Targets {
				if o.Status.Targets[i].PodName == "web-down" {
					t = &o.Status.Targets[i]
				}
			}
			g.Expect(t).NotTo(BeNil())
			g.Expect(t.Phase).To(Equal(v1alpha1.PhaseFailed))
			g.Expect(t.Attempts).To(BeNumerically(">=", 2), "retried")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(up.runtimeValue("k")).To(Equal("v"))

		By("starting the missing proxy")
		down.start()
		Eventually(readyWith(ctx, o, func() *v1alpha1.CommonStatus { return &o.Status.CommonStatus }, 2)).
			WithTimeout(30 * time.Second).Should(Succeed())
		Expect(down.runtimeValue("k")).To(Equal("v"))
	})
})
