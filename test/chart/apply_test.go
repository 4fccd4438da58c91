package chart

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// applyTimeout bounds the creation of one release's objects.
const applyTimeout = 60 * time.Second

// TestCreateThroughAPIServer starts a real kube-apiserver and etcd, installs
// the chart's CRDs from charts/outrigger/crds, and creates every object of
// each rendering with strict field validation: an unknown or misplaced field,
// a wrong type or an invalid value in a template fails here. cert-manager's
// kinds are left out (their CRDs are not installed); the Prometheus
// Operator's PrometheusRule is checked against a minimal CRD of its own
// (testdata/crds).
func TestCreateThroughAPIServer(t *testing.T) {
	assets := requiredEnv(t, "KUBEBUILDER_ASSETS")
	requiredEnv(t, "HELM")
	env := &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(chartDir(t), "crds"), filepath.Join("testdata", "crds")},
			ErrorIfPathMissing: true,
		},
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start the test API server from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the test API server: %v", err)
		}
	})
	if got := len(env.CRDs); got != 4 {
		t.Errorf("installed %d CRDs, want the chart's 3 and PrometheusRule's", got)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatalf("client: %v", err)
	}

	// Each case is a release of its own (own namespace, own names), so the
	// cluster-scoped objects of one do not collide with another's.
	tests := []struct {
		name, release, namespace, values string
		// watched are namespaces the values refer to, made first.
		watched []string
	}{
		{name: "default values", release: "outrigger", namespace: "outrigger-system"},
		{name: "every option", release: "full", namespace: "full-system",
			values: filepath.Join("testdata", "full-values.yaml"), watched: []string{"shop", "payments"}},
		{name: "webhook off", release: "nohook", namespace: "nohook-system",
			values: filepath.Join("testdata", "webhook-off-values.yaml")},
		{name: "monitoring", release: "mon", namespace: "mon-system",
			values: filepath.Join("testdata", "monitoring-values.yaml"), watched: []string{"monitoring"}},
		{name: "monitoring, proxy naming", release: "monproxy", namespace: "monproxy-system",
			values: filepath.Join("testdata", "monitoring-proxy-values.yaml")},
		{name: "control plane", release: "xds", namespace: "xds-system",
			values: filepath.Join("testdata", "control-plane-values.yaml")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
			defer cancel()
			for _, ns := range append([]string{tc.namespace}, tc.watched...) {
				obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
				if err := c.Create(ctx, obj); err != nil {
					t.Fatalf("create namespace %s: %v", ns, err)
				}
			}
			objs := decodeObjects(t, mustHelm(t, renderArgs(t, tc.release, tc.namespace, tc.values)...))
			created := 0
			for _, obj := range objs {
				if obj.GroupVersionKind().Group == "cert-manager.io" {
					continue
				}
				if err := c.Create(ctx, obj, &client.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
					t.Errorf("create %s: %v", describe(obj), err)
					continue
				}
				created++
				// Read it back: the API server stored what was sent.
				back := &unstructured.Unstructured{}
				back.SetGroupVersionKind(obj.GroupVersionKind())
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), back); err != nil {
					t.Errorf("get %s after creating it: %v", describe(obj), err)
				}
			}
			if created == 0 {
				t.Fatal("the rendering created no object")
			}
		})
	}
}

// describe names an object in failure messages.
func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}
