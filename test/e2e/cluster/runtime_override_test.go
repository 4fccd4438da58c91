package cluster_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// selector selects the pods labelled app=<app>.
func selector(app string) v1alpha1.Target {
	return v1alpha1.Target{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

// readyWith returns a check that obj is Ready with n pods succeeded, at its
// current generation.
func readyWith(ctx SpecContext, obj client.Object, status func() *v1alpha1.CommonStatus, n int32) func(Gomega) {
	return func(g Gomega) {
		g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		st := status()
		g.Expect(st.ObservedGeneration).To(Equal(obj.GetGeneration()))
		g.Expect(st.Succeeded).To(Equal(n), "%+v", st)
		g.Expect(meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "%+v", st.Conditions)
	}
}

var _ = Describe("ProxyRuntimeOverride", func() {
	It("shows in each proxy's /runtime, comes back after a proxy restart and on a pod added later, and goes on delete", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		a, b := startProxy(), startProxy()
		createPod(ctx, ns, "web-a", "web", a)
		createPod(ctx, ns, "web-b", "web", b)

		o := &v1alpha1.ProxyRuntimeOverride{
			ObjectMeta: metav1.ObjectMeta{Name: "tune", Namespace: ns},
			Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target:  selector("web"),
				Runtime: map[string]string{"existing.key": "override", "added.key": "on"},
			},
		}
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		Eventually(readyWith(ctx, o, func() *v1alpha1.CommonStatus { return &o.Status.CommonStatus }, 2)).
			WithTimeout(20 * time.Second).Should(Succeed())
		for _, p := range []*proxy{a, b} {
			Expect(p.runtimeValue("existing.key")).To(Equal("override"))
			Expect(p.runtimeValue("added.key")).To(Equal("on"))
		}
		Expect(o.Status.Targets).To(HaveLen(2))
		Expect(o.Status.Targets[0].PodName).To(Equal("web-a"))
		Expect(o.Status.Targets[0].PreviousRuntime).To(Equal(map[string]string{"existing.key": "static"}))
		Expect(o.Status.Targets[0].AddedRuntimeKeys).To(Equal([]string{"added.key"}))

		By("restarting a proxy, which loses its admin layer")
		time.Sleep(2500 * time.Millisecond) // the new process must start measurably later
		a.restart()
		// The new process starts without the admin layer; the controller
		// may notice the restart and set the override again before this
		// reads it, so only its coming back is checked: a fresh process
		// can have the key only from the controller.
		Eventually(func() (string, error) { return a.runtimeValue("added.key") }).
			WithTimeout(20*time.Second).Should(Equal("on"), "the override was not set again on the restarted proxy")

		By("adding a pod")
		c := startProxy()
		createPod(ctx, ns, "web-c", "web", c)
		Eventually(func() (string, error) { return c.runtimeValue("added.key") }).
			WithTimeout(20 * time.Second).Should(Equal("on"))
		Eventually(readyWith(ctx, o, func() *v1alpha1.CommonStatus { return &o.Status.CommonStatus }, 3)).
			WithTimeout(20 * time.Second).Should(Succeed())

		By("deleting the override")
		Expect(cluster.c.Delete(ctx, o)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)) }).
			WithTimeout(20 * time.Second).Should(BeTrue())
		for _, p := range []*proxy{a, b, c} {
			Expect(p.runtimeValue("existing.key")).To(Equal("static"))
			Expect(p.runtimeValue("added.key")).To(Equal(""))
		}
	})

	It("gives a key to the older of two overrides and reports the conflict on the newer", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		a := startProxy()
		createPod(ctx, ns, "web-a", "web", a)
		older := &v1alpha1.ProxyRuntimeOverride{
			ObjectMeta: metav1.ObjectMeta{Name: "older", Namespace: ns},
			Spec:       v1alpha1.ProxyRuntimeOverrideSpec{Target: selector("web"), Runtime: map[string]string{"shared": "older"}},
		}
		Expect(cluster.c.Create(ctx, older)).To(Succeed())
		Eventually(readyWith(ctx, older, func() *v1alpha1.CommonStatus { return &older.Status.CommonStatus }, 1)).
			WithTimeout(20 * time.Second).Should(Succeed())
		time.Sleep(1100 * time.Millisecond) // creation times have a one-second precision
		newer := &v1alpha1.ProxyRuntimeOverride{
			ObjectMeta: metav1.ObjectMeta{Name: "newer", Namespace: ns},
			Spec:       v1alpha1.ProxyRuntimeOverrideSpec{Target: selector("web"), Runtime: map[string]string{"shared": "newer"}},
		}
		Expect(cluster.c.Create(ctx, newer)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(newer), newer)).To(Succeed())
			cond := meta.FindStatusCondition(newer.Status.Conditions, v1alpha1.ConditionConflict)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Message).To(ContainSubstring("runtime:shared (held by older)"))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(func() (string, error) { return a.runtimeValue("shared") }).
			WithTimeout(time.Second).Should(Equal("older"))
	})
})
