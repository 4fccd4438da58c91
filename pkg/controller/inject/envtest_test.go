package inject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository's root folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// webhookConfigs reads the generated config/webhook manifests and adds the
// objectSelector the Helm chart adds, so the test API server sends it the
// labelled pods only, as a real installation does.
func webhookConfigs(t *testing.T) []*admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatalf("config/webhook/manifests.yaml: %v", err)
	}
	if len(cfg.Webhooks) != 1 || cfg.Webhooks[0].Name != "inject.proxy.outrigger.dev" {
		t.Fatalf("config/webhook/manifests.yaml: want the one webhook inject.proxy.outrigger.dev, got %d", len(cfg.Webhooks))
	}
	cfg.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: InjectLabelValue}}
	return []*admissionregistrationv1.MutatingWebhookConfiguration{&cfg}
}

// TestWebhook runs the webhook behind a real API server: config/webhook
// installed, the handler on a manager's webhook server, pods created with a
// client as kubectl would.
func TestWebhook(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(repoRoot(), "bin", "test-assets")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		msg := fmt.Sprintf("no kube-apiserver in %s (run make test-assets, or set KUBEBUILDER_ASSETS)", assets)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		WebhookInstallOptions: envtest.WebhookInstallOptions{MutatingWebhooks: webhookConfigs(t)},
	}
	apiConfig, err := env.Start()
	if err != nil {
		t.Fatalf("start the test API server: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the test API server: %v", err)
		}
	})

	scheme := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wo := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(apiConfig, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Image: "registry.local/outrigger:test", AdminPort: 15000, ProbePort: 15021}
	Register(mgr.GetWebhookServer(), cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("manager did not stop in 10s")
		}
	})
	srv := mgr.GetWebhookServer().(*webhook.DefaultServer)
	waitServing(t, srv.StartedChecker())

	c, err := client.New(apiConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}

	newPod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "shop"}}},
		}
	}
	labelled := map[string]string{InjectLabel: InjectLabelValue}
	cases := map[string]struct {
		pod      *corev1.Pod
		opts     []client.CreateOption
		injected bool
	}{
		"labelled pod":         {pod: newPod("labelled", labelled), injected: true},
		"unlabelled pod":       {pod: newPod("unlabelled", nil)},
		"label not true":       {pod: newPod("label-false", map[string]string{InjectLabel: "false"})},
		"dry-run labelled pod": {pod: newPod("dry-run", labelled), opts: []client.CreateOption{client.DryRunAll}, injected: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The webhook's port may answer a moment before the API
			// server's first call gets through; retry only that.
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := c.Create(t.Context(), tc.pod, tc.opts...)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("create: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			// Create fills tc.pod with the API server's answer: the pod as
			// stored (or as it would be, in a dry run).
			p := tc.pod
			got := Injected(p)
			if got != tc.injected {
				t.Fatalf("injected = %v, want %v; init containers %v", got, tc.injected, names(p.Spec.InitContainers))
			}
			if !tc.injected {
				if len(p.Spec.InitContainers) != 0 || p.Annotations[annotationScrape] != "" {
					t.Errorf("an uninjected pod was changed: %v, %v", names(p.Spec.InitContainers), p.Annotations)
				}
				return
			}
			sidecar := p.Spec.InitContainers[0]
			if sidecar.Name != ContainerName || sidecar.RestartPolicy == nil || *sidecar.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Errorf("first init container %q, restartPolicy %v: want a native sidecar named proxy", sidecar.Name, sidecar.RestartPolicy)
			}
			if sidecar.Image != cfg.Image || sidecar.Ports[0].ContainerPort != cfg.ProbePort {
				t.Errorf("image %q, port %d: want %q and %d", sidecar.Image, sidecar.Ports[0].ContainerPort, cfg.Image, cfg.ProbePort)
			}
			if got := p.Annotations["proxy.outrigger.dev/admin-port"]; got != "15000" {
				t.Errorf("admin-port annotation %q, want 15000", got)
			}
			if got := p.Annotations[annotationPort]; got != "15021" {
				t.Errorf("prometheus.io/port annotation %q, want 15021", got)
			}
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "shop" {
				t.Errorf("containers changed: %v", names(p.Spec.Containers))
			}
		})
	}

	// A dry run stores nothing.
	var stored corev1.Pod
	err = c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "dry-run"}, &stored)
	if err == nil {
		t.Error("the dry-run pod was stored")
	}
	var statusErr interface{ Status() metav1.Status }
	if err != nil && (!errors.As(err, &statusErr) || statusErr.Status().Code != 404) {
		t.Errorf("get the dry-run pod: %v, want not found", err)
	}
}

// waitServing waits until the webhook server completes a TLS handshake.
func waitServing(t *testing.T, started healthz.Checker) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := started(nil)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook server: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
