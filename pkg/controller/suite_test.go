package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient/admintest"
)

// The test API server, shared by every test of the package: starting one
// takes seconds. It is set once, by TestMain, before any test runs.
var (
	apiConfig  *rest.Config
	skipReason string
)

// repoRoot is the repository's root folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestMain starts kube-apiserver and etcd from KUBEBUILDER_ASSETS, or from
// bin/test-assets (make test-assets), with the CRDs installed. Without
// them the tests that need an API server skip.
func TestMain(m *testing.M) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(repoRoot(), "bin", "test-assets")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		skipReason = fmt.Sprintf("no kube-apiserver in %s (run make test-assets, or set KUBEBUILDER_ASSETS)", assets)
		if os.Getenv("CI") != "" {
			// make test builds the assets first; in CI a skip would hide
			// that the reconcilers went untested.
			fmt.Fprintln(os.Stderr, skipReason)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start the test API server: %v\n", err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	apiConfig = cfg
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the test API server: %v\n", err)
	}
	os.Exit(code)
}

// scheme knows the built-in kinds and ours.
func scheme(t testing.TB) *kruntime.Scheme {
	t.Helper()
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// harness is one test's namespace, client and controller.
type harness struct {
	t  testing.TB
	ns string
	c  client.Client
}

// namespaces numbers the tests' namespaces.
var namespaces atomic.Int64

// newHarness creates a namespace and a client for it.
func newHarness(t testing.TB) *harness {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	c, err := client.New(apiConfig, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ns := "t" + strconv.FormatInt(namespaces.Add(1), 10)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ns: ns, c: c}
}

// testOptions are fast timings for tests.
func testOptions() controller.Options {
	return controller.Options{
		Admin:           adminclient.New(adminclient.NewDirect(time.Second), 2*time.Second),
		Workers:         2,
		RecheckInterval: 300 * time.Millisecond,
		PollInterval:    100 * time.Millisecond,
		RetryBase:       100 * time.Millisecond,
		RetryMax:        time.Second,
		RevertAttempts:  3,
	}
}

// startController runs the three reconcilers, watching the harness's
// namespace only, until the returned stop function is called (or the test
// ends).
func (h *harness) startController(opts controller.Options) (stop func()) {
	h.t.Helper()
	mgr, err := ctrl.NewManager(apiConfig, ctrl.Options{
		Scheme:                 scheme(h.t),
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := controller.Setup(mgr, opts); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var stopped atomic.Bool
	stop = func() {
		if stopped.Swap(true) {
			return
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			h.t.Error("manager did not stop in 30s")
		}
	}
	h.t.Cleanup(stop)
	return stop
}

// proxyPod is a fake proxy and the pod it stands in for.
type proxyPod struct {
	name  string
	fake  *admintest.Server
	pod   *corev1.Pod
	label map[string]string
}

// newPod starts a fake admin interface (up for an hour already, so that a
// restart is told apart at once) and creates a running pod for it, with
// the proxy container and the admin port annotation.
func (h *harness) newPod(name string, lbls map[string]string) *proxyPod {
	h.t.Helper()
	fake, err := admintest.New("127.0.0.1:0", map[string]string{"static.key": "s"})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(fake.Close)
	fake.Backdate(time.Hour)
	pod := h.createPod(name, lbls, strconv.Itoa(int(fake.Port())), "127.0.0.1")
	return &proxyPod{name: name, fake: fake, pod: pod, label: lbls}
}

// createPod creates a pod and makes it look running, as a kubelet would.
func (h *harness) createPod(name string, lbls map[string]string, adminPort, ip string) *corev1.Pod {
	h.t.Helper()
	ctx := h.t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: lbls,
			Annotations: map[string]string{v1alpha1.AdminPortAnnotation: adminPort}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "app"},
			{Name: "proxy", Image: "outrigger"},
		}},
	}
	if err := h.c.Create(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if ip != "" {
		pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	if err := h.c.Status().Update(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	return pod
}

// target selects the pods labelled app=<app>.
func target(app string) v1alpha1.Target {
	return v1alpha1.Target{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

// eventually retries check every 50 ms until it returns nil, failing the
// test with its last error after timeout.
func eventually(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get reads a resource.
func (h *harness) get(obj client.Object) error {
	return h.c.Get(h.t.Context(), client.ObjectKeyFromObject(obj), obj)
}

// session opens a direct admin session to a fake proxy, as another client
// of the proxy would.
func session(t testing.TB, p *proxyPod) *adminclient.Session {
	t.Helper()
	c := adminclient.New(adminclient.NewDirect(time.Second), 2*time.Second)
	s, err := c.Session(t.Context(), adminclient.Endpoint{Namespace: "test", Pod: p.name, IP: p.fake.IP(), Port: p.fake.Port()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
