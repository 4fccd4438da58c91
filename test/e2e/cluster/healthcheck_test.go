package cluster_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

var _ = Describe("ProxyHealthCheck", func() {
	// flip fails the health checks of two pods, then makes them pass,
	// checking each proxy with probe after each step.
	flip := func(ctx SpecContext, probe func(*proxy) (int, error)) {
		ns := cluster.namespace(ctx)
		a, b := startProxy(), startProxy()
		createPod(ctx, ns, "web-a", "web", a)
		createPod(ctx, ns, "web-b", "web", b)
		for _, p := range []*proxy{a, b} {
			Expect(probe(p)).To(Equal(http.StatusOK))
		}

		hc := &v1alpha1.ProxyHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Name: "fail", Namespace: ns},
			Spec:       v1alpha1.ProxyHealthCheckSpec{Target: selector("web"), State: v1alpha1.HealthCheckFail},
		}
		Expect(cluster.c.Create(ctx, hc)).To(Succeed())
		status := func() *v1alpha1.CommonStatus { return &hc.Status.CommonStatus }
		Eventually(readyWith(ctx, hc, status, 2)).WithTimeout(20 * time.Second).Should(Succeed())
		for _, p := range []*proxy{a, b} {
			Expect(probe(p)).To(Equal(http.StatusServiceUnavailable))
		}

		By("asking for Ok")
		hc.Spec.State = v1alpha1.HealthCheckOk
		Expect(cluster.c.Update(ctx, hc)).To(Succeed())
		Eventually(readyWith(ctx, hc, status, 2)).WithTimeout(20 * time.Second).Should(Succeed())
		for _, p := range []*proxy{a, b} {
			Expect(probe(p)).To(Equal(http.StatusOK))
		}

		By("failing again, then deleting: onDelete Revert makes them pass")
		hc.Spec.State = v1alpha1.HealthCheckFail
		Expect(cluster.c.Update(ctx, hc)).To(Succeed())
		Eventually(readyWith(ctx, hc, status, 2)).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(cluster.c.Delete(ctx, hc)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(cluster.c.Get(ctx, client.ObjectKeyFromObject(hc), hc)) }).
			WithTimeout(20 * time.Second).Should(BeTrue())
		for _, p := range []*proxy{a, b} {
			Expect(probe(p)).To(Equal(http.StatusOK))
		}
	}

	It("fails, then passes, the health checks seen through /ready", func(ctx SpecContext) {
		flip(ctx, (*proxy).ready)
	})

	It("fails, then passes, the health checks seen through the health-check filter", func(ctx SpecContext) {
		need(feats.healthCheckFilter, "the health_check HTTP filter")
		flip(ctx, (*proxy).healthz)
	})
})
