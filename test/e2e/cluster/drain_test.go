package cluster_test

import (
	"net"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// newDrain is a drain of the pods labelled app=<app>, completing when no
// connection is left or after timeout.
func newDrain(ns, name, app string, timeout time.Duration) *v1alpha1.ProxyDrain {
	return &v1alpha1.ProxyDrain{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ProxyDrainSpec{
			Target:     selector(app),
			Completion: v1alpha1.DrainCompletion{Timeout: metav1.Duration{Duration: timeout}},
		},
	}
}

// holdConnection opens a connection to the proxy's listener and makes one
// keep-alive request on it, so that it counts as an active downstream
// connection until closed.
func holdConnection(p *proxy) net.Conn {
	c, err := net.Dial("tcp", net.JoinHostPort(p.ip, strconv.Itoa(p.listenPort)))
	Expect(err).NotTo(HaveOccurred())
	_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	Expect(err).NotTo(HaveOccurred())
	buf := make([]byte, 512)
	Expect(c.SetReadDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	_, err = c.Read(buf)
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("ProxyDrain", func() {
	It("drains every pod, after which the listener refuses and each pod's status says Drained", func(ctx SpecContext) {
		need(feats.drainListeners, "/drain_listeners")
		ns := cluster.namespace(ctx)
		proxies := []*proxy{startProxy(), startProxy()}
		for i, p := range proxies {
			createPod(ctx, ns, "web-"+strconv.Itoa(i), "web", p)
			Expect(p.listenerRefuses()).To(BeFalse())
		}
		d := newDrain(ns, "drain", "web", 5*time.Second)
		d.Spec.FailHealthChecks = true
		d.Spec.InboundOnly = true
		Expect(cluster.c.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			g.Expect(d.Status.Targets).To(HaveLen(2))
			for _, t := range d.Status.Targets {
				g.Expect(t.Phase).To(Equal(v1alpha1.PhaseDrained), "%+v", t)
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
		for _, p := range proxies {
			Eventually(p.listenerRefuses).WithTimeout(10*time.Second).Should(BeTrue(), "listener of %s still accepts", p.ip)
			Expect(p.ready()).To(Equal(http.StatusServiceUnavailable))
			Eventually(func() int { return p.adminCalls("POST", "/drain_listeners?inboundonly") }).
				WithTimeout(2 * time.Second).Should(Equal(1))
		}
	})

	It("drains at most maxConcurrent pods at a time", func(ctx SpecContext) {
		need(feats.drainListeners, "/drain_listeners")
		need(feats.listenerStats, "listener downstream_cx_active stats")
		ns := cluster.namespace(ctx)
		proxies := []*proxy{startProxy(), startProxy(), startProxy()}
		conns := make([]net.Conn, len(proxies))
		for i, p := range proxies {
			createPod(ctx, ns, "web-"+strconv.Itoa(i), "web", p)
			c := holdConnection(p)
			conns[i] = c
			DeferCleanup(func() { _ = c.Close() })
		}
		d := newDrain(ns, "one-at-a-time", "web", time.Minute)
		d.Spec.Rollout.MaxConcurrent = 1
		Expect(cluster.c.Create(ctx, d)).To(Succeed())
		for i, p := range proxies {
			// Pod i drains; the others wait for its connection to go.
			Eventually(func() int { return p.adminCalls("POST", "/drain_listeners") }).
				WithTimeout(20 * time.Second).Should(Equal(1))
			Consistently(func(g Gomega) {
				g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
				g.Expect(d.Status.InProgress + d.Status.Failed).To(BeNumerically("<=", 1))
				for _, later := range proxies[i+1:] {
					g.Expect(later.adminCalls("POST", "/drain_listeners")).To(BeZero())
				}
			}).WithTimeout(time.Second).Should(Succeed())
			Expect(conns[i].Close()).To(Succeed())
		}
		Eventually(func() int32 {
			Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			return d.Status.Succeeded
		}).WithTimeout(20 * time.Second).Should(Equal(int32(3)))
	})

	It("resumes after a controller restart in the middle of a drain without draining a pod twice", func(ctx SpecContext) {
		need(feats.drainListeners, "/drain_listeners")
		ns := cluster.namespace(ctx)
		proxies := []*proxy{startProxy(), startProxy()}
		for i, p := range proxies {
			createPod(ctx, ns, "web-"+strconv.Itoa(i), "web", p)
		}
		// Connections keep the pods draining while the controller restarts;
		// without connection stats the timeout does.
		timeout := 8 * time.Second
		var conns []net.Conn
		if feats.listenerStats {
			timeout = time.Minute
			for _, p := range proxies {
				c := holdConnection(p)
				DeferCleanup(func() { _ = c.Close() })
				conns = append(conns, c)
			}
		}
		d := newDrain(ns, "drain", "web", timeout)
		Expect(cluster.c.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			g.Expect(d.Status.Targets).To(HaveLen(2))
			for _, t := range d.Status.Targets {
				g.Expect(t.DrainStartedAt).NotTo(BeNil())
			}
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("restarting the controller")
		ctl.stop()
		ctl.start()
		if feats.listenerStats {
			time.Sleep(time.Second)
			for _, p := range proxies {
				Expect(p.adminCalls("POST", "/drain_listeners")).To(Equal(1))
			}
			for _, c := range conns {
				Expect(c.Close()).To(Succeed())
			}
		}
		Eventually(func() int32 {
			Expect(cluster.c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			return d.Status.Succeeded
		}).WithTimeout(90 * time.Second).Should(Equal(int32(2)))
		time.Sleep(200 * time.Millisecond) // the access log's flush
		for _, p := range proxies {
			Expect(p.adminCalls("POST", "/drain_listeners")).To(Equal(1), "a pod was drained twice")
		}
	})
})
