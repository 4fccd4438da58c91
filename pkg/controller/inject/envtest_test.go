package inject

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
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
// selectors the Helm chart adds, so the test API server sends it the pods
// labelled and those of labelled namespaces only, as a real installation
// does.
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
	if len(cfg.Webhooks) != 2 || cfg.Webhooks[0].Name != "inject.proxy.outrigger.dev" || cfg.Webhooks[1].Name != "namespace.inject.proxy.outrigger.dev" {
		t.Fatalf("config/webhook/manifests.yaml: want the webhooks inject.proxy.outrigger.dev and namespace.inject.proxy.outrigger.dev, got %d", len(cfg.Webhooks))
	}
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: InjectLabelValue}}
	cfg.Webhooks[0].ObjectSelector = labelled
	cfg.Webhooks[1].NamespaceSelector = labelled
	cfg.Webhooks[1].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: InjectLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{InjectLabelValue, InjectDisabledValue},
	}}}
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
	cfg := Config{Image: "registry.local/outrigger:test", AdminPort: 15000, ProbePort: 15021,
		ControlPlane: &ControlPlane{Address: "xds.mesh-system.svc", Port: 18000, CABundle: testCA}}
	Register(mgr.GetWebhookServer(), cfg, mgr.GetEventRecorder("outrigger-injector"))
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
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		// The refusals' events are told apart by their pod's namespace:
		// the recorder folds those of one pod name into a series.
		{ObjectMeta: metav1.ObjectMeta{Name: "certs"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "mesh", Labels: map[string]string{InjectLabel: InjectLabelValue}}},
	} {
		if err := c.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}

	newPod := func(namespace, name string, labels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: annotations},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "shop"}}},
		}
	}
	// The webhook's port may answer a moment before the API server's
	// first call gets through; retry only that, with a dry run.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Create(t.Context(), newPod("shop", "warm-up", labelled(), nil), client.DryRunAll)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	optOut := map[string]string{InjectLabel: InjectDisabledValue}
	cases := map[string]struct {
		pod      *corev1.Pod
		opts     []client.CreateOption
		injected bool
		check    func(t *testing.T, p *corev1.Pod) // more checks of an injected pod
	}{
		"labelled pod":                    {pod: newPod("shop", "labelled", labelled(), nil), injected: true},
		"unlabelled pod":                  {pod: newPod("shop", "unlabelled", nil, nil)},
		"label not true":                  {pod: newPod("shop", "label-false", optOut, nil)},
		"labelled pod, opt-out":           {pod: newPod("shop", "opt-out", labelled(), optOut)},
		"dry-run labelled pod":            {pod: newPod("shop", "dry-run", labelled(), nil), opts: []client.CreateOption{client.DryRunAll}, injected: true},
		"labelled namespace":              {pod: newPod("mesh", "unlabelled", nil, nil), injected: true},
		"labelled namespace and pod":      {pod: newPod("mesh", "labelled", labelled(), nil), injected: true},
		"labelled namespace, label false": {pod: newPod("mesh", "label-false", optOut, nil)},
		"labelled namespace, opt-out":     {pod: newPod("mesh", "opt-out", nil, optOut)},
		"labelled pod with a tls secret": {
			pod: newPod("shop", "tls-secret", labelled(), map[string]string{AnnotationTLSSecret: "shop-tls"}), injected: true,
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != TLSVolume || p.Spec.Volumes[0].Secret == nil || p.Spec.Volumes[0].Secret.SecretName != "shop-tls" {
					t.Errorf("volumes %+v: want the Secret shop-tls as %s", p.Spec.Volumes, TLSVolume)
				}
				want := []corev1.VolumeMount{{Name: TLSVolume, MountPath: TLSDir, ReadOnly: true}}
				if got := p.Spec.InitContainers[0].VolumeMounts; !reflect.DeepEqual(got, want) {
					t.Errorf("proxy mounts %+v, want %+v", got, want)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := c.Create(t.Context(), tc.pod, tc.opts...); err != nil {
				t.Fatalf("create: %v", err)
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
			// The bootstrap joined to the control plane went through the
			// API server as the webhook patched it in.
			if args := strings.Join(sidecar.Args, " "); !strings.Contains(args, "cluster_name: xds_cluster") || !strings.Contains(args, `"xds.mesh-system.svc"`) {
				t.Errorf("the proxy's bootstrap does not join the control plane: %s", args)
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
			if tc.check != nil {
				tc.check(t, p)
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

	t.Run("refusals", func(t *testing.T) { testRefusals(t, c) })
}

// labelled is the labels of a pod that asks for a proxy.
func labelled() map[string]string {
	return map[string]string{InjectLabel: InjectLabelValue}
}

// testRefusals creates pods the webhook refuses, through the API server:
// the creation fails with the webhook's message naming the annotation, the
// pod is not stored, and a Warning event is recorded on the pod's
// controller.
func testRefusals(t *testing.T, c client.Client) {
	// A ReplicaSet for the refused pods to belong to; no controller runs
	// it here, the test creates its pods as the ReplicaSet controller would.
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-7d4b9", Namespace: "mesh"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "shop"}}},
			},
		},
	}
	if err := c.Create(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		namespace   string
		labels      map[string]string
		annotations map[string]string
		webhook     string // the entry that refuses
		message     string
	}{
		"bad quantity, labelled pod": {
			namespace: "shop", labels: labelled(), annotations: map[string]string{AnnotationProxyMemory: "lots"},
			webhook: "inject.proxy.outrigger.dev", message: `proxy injection refused: proxy.outrigger.dev/proxy-memory: "lots" is not a quantity`,
		},
		"bad tls secret name, labelled pod": {
			namespace: "certs", labels: labelled(), annotations: map[string]string{AnnotationTLSSecret: "Shop.TLS"},
			webhook: "inject.proxy.outrigger.dev", message: `proxy injection refused: proxy.outrigger.dev/tls-secret: "Shop.TLS" is not a Secret name`,
		},
		"bad port, labelled namespace": {
			namespace:   "mesh",
			annotations: map[string]string{AnnotationCapture: "true", AnnotationExcludeOutboundPorts: "5432,http"},
			webhook:     "namespace.inject.proxy.outrigger.dev", message: `proxy injection refused: proxy.outrigger.dev/exclude-outbound-ports: "http" is not a port`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			labels := map[string]string{"app": "shop"}
			maps.Copy(labels, tc.labels)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: "shop-7d4b9-", Namespace: tc.namespace, Labels: labels, Annotations: tc.annotations,
				},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "shop"}}},
			}
			if tc.namespace == rs.Namespace {
				pod.OwnerReferences = []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true),
				}}
			}
			err := c.Create(t.Context(), pod)
			if err == nil {
				t.Fatalf("created pod %s: want a refusal", pod.Name)
			}
			want := fmt.Sprintf("admission webhook %q denied the request: %s", tc.webhook, tc.message)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("create: %v\nwant an error containing %q", err, want)
			}
			if !apierrors.IsForbidden(err) {
				t.Errorf("create: %v, want 403 Forbidden", err)
			}
			var pods corev1.PodList
			if err := c.List(t.Context(), &pods, client.InNamespace(tc.namespace), client.MatchingLabels(labels)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.GenerateName == "shop-7d4b9-" {
					t.Errorf("a refused pod was stored: %s", p.Name)
				}
			}
			// The event goes through the recorder's queue: wait for it.
			wantRef := corev1.ObjectReference{Kind: "Pod", Namespace: tc.namespace, Name: "shop-7d4b9-"}
			if tc.namespace == rs.Namespace {
				wantRef = corev1.ObjectReference{Kind: "ReplicaSet", Namespace: rs.Namespace, Name: rs.Name, UID: rs.UID}
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				var list eventsv1.EventList
				if err := c.List(t.Context(), &list, client.InNamespace(tc.namespace)); err != nil {
					t.Fatal(err)
				}
				for _, e := range list.Items {
					r := e.Regarding
					if e.Reason == ReasonInjectionRefused && e.Type == corev1.EventTypeWarning && r.Kind == wantRef.Kind &&
						r.Name == wantRef.Name && r.UID == wantRef.UID && strings.Contains(e.Note, tc.message[len("proxy injection refused: "):]) {
						return
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no %s event on %s %s with the refusal; events: %+v", ReasonInjectionRefused, wantRef.Kind, wantRef.Name, list.Items)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
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
