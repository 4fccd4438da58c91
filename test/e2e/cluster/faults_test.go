package cluster_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// Short leader election timings for the specs that lose or kill a leader.
var fastLease = []string{
	"--leader-election-lease-duration=4s",
	"--leader-election-renew-deadline=3s",
	"--leader-election-retry-period=500ms",
}

// restartMargin is how long after a sidecar started it must be restarted
// for its uptime to prove the restart (the uptime is in whole seconds; a
// second is allowed for clocks).
const restartMargin = 3500 * time.Millisecond

// phases counts the override's targets by phase.
func phases(o *v1alpha1.ProxyRuntimeOverride) map[v1alpha1.TargetPhase]int {
	out := map[v1alpha1.TargetPhase]int{}
	for _, t := range o.Status.Targets {
		out[t.Phase]++
	}
	return out
}

// modifyCalls waits for the sidecars' admin access logs (flushed every
// 50 ms) and counts each one's POST /runtime_modify calls.
func modifyCalls(pods []*fleetPod) map[string]int {
	time.Sleep(200 * time.Millisecond)
	out := map[string]int{}
	for _, fp := range pods {
		out[fp.name] = fp.p.adminCalls("POST", "/runtime_modify")
	}
	return out
}

// each maps every pod to n.
func each(pods []*fleetPod, n int) map[string]int {
	out := map[string]int{}
	for _, fp := range pods {
		out[fp.name] = n
	}
	return out
}

var _ = Describe("Faults", func() {
	It("rolls out slowly (maxConcurrent 1, 20 pods, a throttled API client) with no false restart, and the delete leaves no value on any sidecar", func(ctx SpecContext) {
		lease := ownControllers()
		_, metricsAddr := specController("slow", cluster.kubeconfig, lease, "--kube-api-qps=2", "--kube-api-burst=1")
		ns := cluster.namespace(ctx)
		pods := fleet(ctx, ns, "web", 0, 20, true)
		o := newOverride(ns, "slow", "web", 1)
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		appliedAll(ctx, o, pods, 90*time.Second)

		By("letting the rechecks (every 500 ms) run")
		Consistently(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			correctRecords(g, o, len(pods))
			holdsOverride(g, pods)
		}).WithTimeout(4 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(eventsOf(ctx, ns, "ProxyRestarted")).To(BeEmpty())
		Expect(modifyCalls(pods)).To(Equal(each(pods, 1)), "the values were set more than once")

		By("reading the controller's metrics")
		Eventually(func(g Gomega) {
			m, err := scrape(metricsAddr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(metricValue(m, "controller_runtime_reconcile_total", `controller="proxyruntimeoverride"`)).To(BeNumerically(">", 0))
			g.Expect(metricValue(m, "outrigger_controller_admin_calls_total", `endpoint="/runtime_modify"`, `result="success"`)).To(Equal(20.0))
			g.Expect(metricValue(m, "outrigger_controller_admin_call_duration_seconds_count", `endpoint="/server_info"`)).To(BeNumerically(">=", 40))
			g.Expect(metricValue(m, "outrigger_controller_targets", `kind="ProxyRuntimeOverride"`, `phase="Applied"`)).To(Equal(20.0))
			g.Expect(metricValue(m, "outrigger_controller_false_restarts_total")).To(BeZero())
			g.Expect(metricValue(m, "outrigger_controller_proxy_restarts_total")).To(BeZero())
			// Records and results are written once per chunk of the
			// pods read in 2 s, so the count depends on how fast this
			// machine is (4 on an idle one, 15 under a load of 10); the
			// bug wrote several times per pod. Writes while idle are
			// checked by the 40-pod spec.
			g.Expect(metricValue(m, "outrigger_controller_status_writes_total", `kind="ProxyRuntimeOverride"`)).To(BeNumerically("<", len(pods)))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("deleting the override (onDelete Revert)")
		deleteAndWait(ctx, o, 60*time.Second)
		holdsNothing(pods)
		Expect(modifyCalls(pods)).To(Equal(each(pods, 2)), "one call to set the values, one to restore them")
		m, err := scrape(metricsAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(metricValue(m, "outrigger_controller_reverts_total", `kind="ProxyRuntimeOverride"`, `result="restored"`)).To(Equal(20.0))
		Expect(metricValue(m, "outrigger_controller_revert_skipped_total")).To(BeZero())
	})

	It("sets the values again on sidecars killed and restarted mid-rollout, with the sidecars' own previous values on record", func(ctx SpecContext) {
		lease := ownControllers()
		specController("restarts", cluster.kubeconfig, lease)
		ns := cluster.namespace(ctx)
		up := fleet(ctx, ns, "web", 0, 14, true)
		upAt := time.Now()
		late := fleet(ctx, ns, "web", 14, 6, false) // nothing listens yet: the rollout retries them
		all := append(append([]*fleetPod{}, up...), late...)
		o := newOverride(ns, "tune", "web", 1)
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			g.Expect(phases(o)).To(Equal(map[v1alpha1.TargetPhase]int{v1alpha1.PhaseApplied: 14, v1alpha1.PhaseFailed: 6}))
			holdsOverride(g, up)
		}).WithTimeout(60 * time.Second).Should(Succeed())

		By("killing and restarting 4 applied sidecars (2 with the kubelet's restart count), and starting the missing ones")
		time.Sleep(time.Until(upAt.Add(restartMargin)))
		for i, fp := range up[:4] {
			fp.p.crash()
			if i%2 == 0 {
				kubeletRestart(ctx, fp.pod)
			}
		}
		startAll(late)
		appliedAll(ctx, o, all, 60*time.Second)
		Eventually(func() map[string]int { return eventsOf(ctx, ns, "ProxyRestarted") }).
			WithTimeout(10 * time.Second).Should(Equal(map[string]int{"Pod": 4}))

		deleteAndWait(ctx, o, 60*time.Second)
		holdsNothing(all)
	})

	It("rides out the API server going away mid-rollout: it stands down, campaigns again and resumes, without exiting", func(ctx SpecContext) {
		lease := ownControllers()
		api := startAPIProxy()
		c, metricsAddr := specController("outage", kubeconfigVia(api.addr), lease, fastLease...)
		ns := cluster.namespace(ctx)
		up := fleet(ctx, ns, "web", 0, 8, true)
		upAt := time.Now()
		late := fleet(ctx, ns, "web", 8, 4, false)
		o := newOverride(ns, "tune", "web", 2)
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			g.Expect(phases(o)).To(Equal(map[v1alpha1.TargetPhase]int{v1alpha1.PhaseApplied: 8, v1alpha1.PhaseFailed: 4}))
		}).WithTimeout(60 * time.Second).Should(Succeed())
		pid := c.pid()

		By("cutting the controller off the API server for 8 s, while pods come, sidecars start and two restart")
		api.cut()
		cutAt := time.Now()
		startAll(late)
		more := fleet(ctx, ns, "web", 12, 3, true)
		time.Sleep(time.Until(upAt.Add(restartMargin)))
		up[0].p.crash()
		up[1].p.crash()
		Eventually(c.log).WithTimeout(15*time.Second).Should(ContainSubstring("lost the leader lease"),
			"the leader did not stand down past its renew deadline (3 s)")
		time.Sleep(time.Until(cutAt.Add(8 * time.Second)))
		Expect(c.exited()).To(BeFalse(), "the controller exited: %s", c.log())

		api.restore()
		restoredAt := time.Now()
		all := append(append(append([]*fleetPod{}, up...), late...), more...)
		appliedAll(ctx, o, all, 45*time.Second)
		GinkgoWriter.Printf("converged %s after the API server came back\n", time.Since(restoredAt).Round(100*time.Millisecond))
		Expect(c.pid()).To(Equal(pid), "the controller process changed")
		Expect(c.exited()).To(BeFalse())
		m, err := scrape(metricsAddr)
		Expect(err).NotTo(HaveOccurred())
		Expect(metricValue(m, "outrigger_controller_leadership_lost_total")).To(BeNumerically(">=", 1))
		Expect(metricValue(m, "outrigger_controller_leadership_acquired_total")).To(BeNumerically(">=", 2))

		deleteAndWait(ctx, o, 60*time.Second)
		holdsNothing(all)
	})

	It("hands over to the other replica when the leader is killed, applying each change once, and a clean stop hands back at once", func(ctx SpecContext) {
		lease := ownControllers()
		a, _ := specController("replica-a", cluster.kubeconfig, lease, fastLease...)
		Eventually(func() string { return leaseHolder(ctx, lease) }).WithTimeout(20 * time.Second).Should(Equal("replica-a"))
		b, _ := specController("replica-b", cluster.kubeconfig, lease, fastLease...)
		ns := cluster.namespace(ctx)
		pods := fleet(ctx, ns, "web", 0, 10, true)
		o := newOverride(ns, "tune", "web", 10)
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		appliedAll(ctx, o, pods, 30*time.Second)

		By("killing the leader, then adding pods")
		a.kill()
		killedAt := time.Now()
		more := fleet(ctx, ns, "web", 10, 2, true)
		all := append(append([]*fleetPod{}, pods...), more...)
		Eventually(func() string { return leaseHolder(ctx, lease) }).WithTimeout(15 * time.Second).Should(Equal("replica-b"))
		GinkgoWriter.Printf("replica-b took over %s after the leader was killed\n", time.Since(killedAt).Round(100*time.Millisecond))
		appliedAll(ctx, o, all, 30*time.Second)
		Expect(modifyCalls(all)).To(Equal(each(all, 1)), "a value was set twice")

		By("restarting the killed replica: it stands by")
		a.start()
		Consistently(func() string { return leaseHolder(ctx, lease) }).WithTimeout(2 * time.Second).Should(Equal("replica-b"))

		By("stopping the leader: it releases the lease, the other takes it at once")
		b.stop()
		stoppedAt := time.Now()
		Eventually(func() string { return leaseHolder(ctx, lease) }).WithTimeout(3 * time.Second).Should(Equal("replica-a"))
		GinkgoWriter.Printf("replica-a took over %s after the leader stopped\n", time.Since(stoppedAt).Round(100*time.Millisecond))
		deleteAndWait(ctx, o, 30*time.Second)
		holdsNothing(all)
		Expect(modifyCalls(all)).To(Equal(each(all, 2)))
	})

	It("takes its own lease back at once when restarted after a crash (stable identity), long before the lease would expire", func(ctx SpecContext) {
		lease := ownControllers()
		c, _ := specController("crashy", cluster.kubeconfig, lease) // the default 15 s lease
		Eventually(func() string { return leaseHolder(ctx, lease) }).WithTimeout(20 * time.Second).Should(Equal("crashy"))
		ns := cluster.namespace(ctx)
		pods := fleet(ctx, ns, "web", 0, 3, true)

		c.kill()
		c.start()
		restartedAt := time.Now()
		o := newOverride(ns, "tune", "web", 10)
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		appliedAll(ctx, o, pods, 20*time.Second)
		took := time.Since(restartedAt)
		GinkgoWriter.Printf("applied %s after the restart\n", took.Round(100*time.Millisecond))
		Expect(took).To(BeNumerically("<", 10*time.Second), "waited for the old lease (15 s) to expire")
		Expect(c.log()).NotTo(ContainSubstring("lock is held by"))

		By("a clean stop releases the lease")
		c.stop()
		Expect(leaseHolder(ctx, lease)).To(BeEmpty())
		c.start()
		deleteAndWait(ctx, o, 30*time.Second)
		holdsNothing(pods)
	})

	It("converges 40 pods one at a time with a few status writes, writes none while idle, and caps the pod events", func(ctx SpecContext) {
		ns := cluster.namespace(ctx)
		const n = 40
		pods := fleet(ctx, ns, "web", 0, n, true)
		o := newOverride(ns, "tune", "web", 1)
		writes := statusWrites(ctx, o, &v1alpha1.ProxyRuntimeOverrideList{})
		start := time.Now()
		Expect(cluster.c.Create(ctx, o)).To(Succeed())
		appliedAll(ctx, o, pods, 30*time.Second)
		GinkgoWriter.Printf("%d pods applied in %s with %d status writes\n", n, time.Since(start).Round(10*time.Millisecond), writes())
		// The first reconcile writes the records, then the results; one
		// more may come from a reconcile the pods' events queued.
		// (Chunks are of 2 s of admin calls: a loaded machine takes a
		// few more.)
		Expect(writes()).To(BeNumerically("<=", 6))
		before := writes()
		time.Sleep(3 * time.Second) // six rechecks
		Expect(writes()).To(Equal(before), "status written while nothing changed")

		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns, "Applied")).To(HaveKeyWithValue("Pod", 10))
			g.Expect(eventsOf(ctx, ns, "Applied")).To(HaveKeyWithValue("ProxyRuntimeOverride", 1))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		deleteAndWait(ctx, o, 30*time.Second)
		holdsNothing(pods)
		Expect(modifyCalls(pods)).To(Equal(each(pods, 2)))
	})
})
