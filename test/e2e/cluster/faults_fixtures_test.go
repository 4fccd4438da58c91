package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// apiProxy is a TCP proxy in front of the API server. A controller given
// its address sees the API server go away when it is cut (connections
// reset, new ones refused) and come back when it is restored, while the
// API server itself, and the tests' own client, carry on.
type apiProxy struct {
	upstream string
	addr     string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startAPIProxy listens on a free loopback port and forwards to the suite's
// API server.
func startAPIProxy() *apiProxy {
	u, err := url.Parse(cluster.env.Config.Host)
	Expect(err).NotTo(HaveOccurred())
	p := &apiProxy{upstream: u.Host, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p.addr = ln.Addr().String()
	p.serve(ln)
	DeferCleanup(p.close)
	return p
}

// serve accepts on ln until it is closed.
func (p *apiProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.pipe(c)
			}()
		}
	}()
}

// pipe forwards one connection both ways until either side ends or the
// proxy is cut.
func (p *apiProxy) pipe(down net.Conn) {
	up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		_ = down.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		_ = down.Close()
		_ = up.Close()
		return
	}
	p.conns[down], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	_ = down.Close()
	_ = up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, down)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut stops listening and resets every connection: the API server is gone.
func (p *apiProxy) cut() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a clean close
		}
		_ = c.Close()
	}
}

// restore listens on the same address again.
func (p *apiProxy) restore() {
	var ln net.Listener
	Eventually(func() error {
		var err error
		ln, err = net.Listen("tcp", p.addr)
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
	p.serve(ln)
}

// close cuts the proxy for good and waits for its goroutines.
func (p *apiProxy) close() {
	p.cut()
	p.wg.Wait()
}

// kubeconfigVia writes a copy of the controller's kubeconfig that reaches
// the API server through addr.
func kubeconfigVia(addr string) string {
	cfg, err := clientcmd.LoadFromFile(cluster.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	path := filepath.Join(GinkgoT().TempDir(), "via-proxy.kubeconfig")
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// faultLeases numbers the leases of the fault specs' controllers.
var faultLeases atomic.Int64

// ownControllers stops the suite's controller for the rest of the spec (it
// starts again at the end) and returns a lease name for the spec's own
// controllers, so that only they act on the spec's resources.
func ownControllers() string {
	ctl.stop()
	DeferCleanup(ctl.start)
	return fmt.Sprintf("fault-%d.proxy.outrigger.dev", faultLeases.Add(1))
}

// specController starts a controller of the spec, with its own lease,
// identity and metrics port; it is stopped when the spec ends.
func specController(name, kubeconfig, lease string, extra ...string) (*controllerProcess, string) {
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort("127.0.0.1")))
	c := newController(cluster, name, kubeconfig, append([]string{
		"--leader-election-id=" + lease,
		"--leader-election-identity=" + name,
		"--metrics-bind-address=" + metricsAddr,
	}, extra...)...)
	c.start()
	DeferCleanup(c.stop)
	return c, metricsAddr
}

// scrape reads a controller's /metrics.
func scrape(addr string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// metricValue is the sum of the samples of a metric whose label set
// contains every one of labels (`name="value"`), from a /metrics text.
func metricValue(text, name string, labels ...string) float64 {
	sum := 0.0
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		head, val, ok := strings.Cut(line, " ")
		if i := strings.LastIndex(line, "} "); i >= 0 {
			head, val, ok = line[:i+1], line[i+2:], true
		}
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(head, l)
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// leaseHolder is the holder of a lease ("" when free or missing).
func leaseHolder(ctx context.Context, name string) string {
	var l coordinationv1.Lease
	if err := cluster.c.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: name}, &l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// fleetPod is one pod of a fleet and its sidecar.
type fleetPod struct {
	name string
	p    *proxy
	pod  *corev1.Pod
}

// fleet creates n pods named <app>-NN, labelled app=<app>, each with its
// sidecar, started (at most 8 at once) unless up is false.
func fleet(ctx context.Context, ns, app string, first, n int, up bool) []*fleetPod {
	out := make([]*fleetPod, n)
	for i := range out {
		p := newProxy(feats.healthCheckFilter)
		DeferCleanup(p.stop)
		out[i] = &fleetPod{name: fmt.Sprintf("%s-%03d", app, first+i), p: p}
	}
	if up {
		startAll(out)
	}
	for _, fp := range out {
		fp.pod = createPod(ctx, ns, fp.name, app, fp.p)
	}
	return out
}

// startAll starts the sidecars of pods, at most 8 at once.
func startAll(pods []*fleetPod) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, fp := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer GinkgoRecover()
			defer func() { <-sem; wg.Done() }()
			fp.p.start()
		}()
	}
	wg.Wait()
}

// kubeletRestart raises the restart count of the pod's proxy container,
// as the kubelet does when the container restarts.
func kubeletRestart(ctx context.Context, pod *corev1.Pod) {
	Eventually(func() error {
		if err := cluster.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		n := int32(1)
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "proxy" {
				n = s.RestartCount + 1
			}
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", RestartCount: n, Ready: true}}
		return cluster.c.Status().Update(ctx, pod)
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// The override every fault spec applies: one key the sidecars' static
// layer has, one they do not.
var faultRuntime = map[string]string{"existing.key": "override", "added.key": "on"}

// newOverride is an override of faultRuntime on the pods app=<app>.
func newOverride(ns, name, app string, maxConcurrent int32) *v1alpha1.ProxyRuntimeOverride {
	return &v1alpha1.ProxyRuntimeOverride{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ProxyRuntimeOverrideSpec{
			Target:  selector(app),
			Rollout: v1alpha1.Rollout{MaxConcurrent: maxConcurrent},
			Runtime: faultRuntime,
		},
	}
}

// holdsOverride checks the sidecars' own /runtime: each holds the
// override's values.
func holdsOverride(g Gomega, pods []*fleetPod) {
	for _, fp := range pods {
		g.Expect(fp.p.runtimeValue("existing.key")).To(Equal("override"), "%s (%s)", fp.name, fp.p.ip)
		g.Expect(fp.p.runtimeValue("added.key")).To(Equal("on"), "%s (%s)", fp.name, fp.p.ip)
	}
}

// holdsNothing checks the sidecars' own /runtime: no value of the
// override is left, the static one is back.
func holdsNothing(pods []*fleetPod) {
	GinkgoHelper()
	var leaked []string
	for _, fp := range pods {
		existing, err := fp.p.runtimeValue("existing.key")
		Expect(err).NotTo(HaveOccurred())
		added, err := fp.p.runtimeValue("added.key")
		Expect(err).NotTo(HaveOccurred())
		if existing != "static" || added != "" {
			leaked = append(leaked, fmt.Sprintf("%s: existing.key=%q added.key=%q", fp.name, existing, added))
		}
	}
	Expect(leaked).To(BeEmpty(), "values left on sidecars after the delete")
}

// correctRecords checks every pod's entry: Applied, and the previous
// values are the sidecar's own, never the override's.
func correctRecords(g Gomega, o *v1alpha1.ProxyRuntimeOverride, n int) {
	g.Expect(o.Status.Targets).To(HaveLen(n))
	for _, t := range o.Status.Targets {
		g.Expect(t.Phase).To(Equal(v1alpha1.PhaseApplied), "%s: %s", t.PodName, t.Message)
		g.Expect(t.PreviousRuntime).To(Equal(map[string]string{"existing.key": "static"}), t.PodName)
		g.Expect(t.AddedRuntimeKeys).To(Equal([]string{"added.key"}), t.PodName)
	}
}

// appliedAll waits until the override is Ready on n pods with correct
// records and every sidecar holds its values.
func appliedAll(ctx SpecContext, o *v1alpha1.ProxyRuntimeOverride, pods []*fleetPod, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		readyWith(ctx, o, func() *v1alpha1.CommonStatus { return &o.Status.CommonStatus }, int32(len(pods)))(g)
		correctRecords(g, o, len(pods))
		holdsOverride(g, pods)
	}).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// deleteAndWait deletes the override and waits for it to go.
func deleteAndWait(ctx context.Context, o *v1alpha1.ProxyRuntimeOverride, timeout time.Duration) {
	GinkgoHelper()
	Expect(cluster.c.Delete(ctx, o)).To(Succeed())
	Eventually(func() error {
		err := cluster.c.Get(ctx, client.ObjectKeyFromObject(o), o)
		if err == nil {
			return fmt.Errorf("still there: %+v", o.Status.Conditions)
		}
		return client.IgnoreNotFound(err)
	}).WithTimeout(timeout).Should(Succeed())
}

// eventsOf counts the events of a reason in the namespace, series
// included, by the kind of object they regard.
func eventsOf(ctx context.Context, ns, reason string) map[string]int {
	var list eventsv1.EventList
	Expect(cluster.c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Reason != reason {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		out[e.Regarding.Kind] += n
	}
	return out
}

// statusWrites counts the writes of an object's status, watching it from
// before it is created; count tells how many so far. The watch ends with
// the spec.
func statusWrites(ctx context.Context, obj client.Object, list client.ObjectList) (count func() int) {
	w, err := cluster.c.Watch(ctx, list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"metadata.name": obj.GetName()})
	Expect(err).NotTo(HaveOccurred())
	var (
		mu     sync.Mutex
		writes int
		last   map[string]any
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			o, ok := e.Object.(client.Object)
			if !ok || (e.Type != watch.Added && e.Type != watch.Modified) {
				continue
			}
			st := statusOf(o)
			mu.Lock()
			if e.Type == watch.Modified && !equality.Semantic.DeepEqual(st, last) {
				writes++
			}
			last = st
			mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		w.Stop()
		<-done
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return writes
	}
}

// statusOf is an object's status as a map (nil without one).
func statusOf(o client.Object) map[string]any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil
	}
	st, _ := u["status"].(map[string]any)
	return st
}

// envOr is an environment variable's value, or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
