package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestWebhookMatchesGenerated fails when the chart's webhook differs from
// config/webhook/manifests.yaml, which controller-gen makes from the
// marker beside the handler, in anything but what the chart owns: where
// the API server reaches the webhook (the Service, the CA bundle), which
// pods it sends (the objectSelector the marker cannot express) and the
// rules' scope.
func TestWebhookMatchesGenerated(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want admissionv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &want); err != nil {
		t.Fatalf("parse config/webhook/manifests.yaml: %v", err)
	}
	if len(want.Webhooks) != 2 {
		t.Fatalf("config/webhook/manifests.yaml has %d webhooks, want 2", len(want.Webhooks))
	}

	objs := decodeObjects(t, mustHelm(t, renderArgs(t, testRelease, testNamespace, "")...))
	rendered := findObject(t, objs, "MutatingWebhookConfiguration", testRelease+"-inject")
	var got admissionv1.MutatingWebhookConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(rendered.Object, &got, true); err != nil {
		t.Fatalf("convert the rendered webhook configuration: %v", err)
	}
	if len(got.Webhooks) != len(want.Webhooks) {
		t.Fatalf("the chart renders %d webhooks, want %d", len(got.Webhooks), len(want.Webhooks))
	}
	// The selectors the chart adds: pods labelled "true" on the first
	// entry; on the second, the other pods (not labelled "true" or
	// "false") of the namespaces labelled "true".
	injectLabel := map[string]string{"proxy.outrigger.dev/inject": "true"}
	selectors := map[string]struct {
		object, namespace *metav1.LabelSelector
	}{
		"inject.proxy.outrigger.dev": {object: &metav1.LabelSelector{MatchLabels: injectLabel}, namespace: &metav1.LabelSelector{}},
		"namespace.inject.proxy.outrigger.dev": {
			object: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "proxy.outrigger.dev/inject", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true", "false"},
			}}},
			namespace: &metav1.LabelSelector{MatchLabels: injectLabel, MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{testNamespace},
			}}},
		},
	}
	for i := range want.Webhooks {
		g, w := got.Webhooks[i], want.Webhooks[i]
		sel, ok := selectors[w.Name]
		if !ok {
			t.Fatalf("config/webhook/manifests.yaml has an unknown webhook %s", w.Name)
		}
		if g.ClientConfig.Service == nil || g.ClientConfig.Service.Path == nil || *g.ClientConfig.Service.Path != *w.ClientConfig.Service.Path {
			t.Errorf("%s: the chart's webhook path is %v, want %s", w.Name, g.ClientConfig.Service, *w.ClientConfig.Service.Path)
		}
		if diff := cmp.Diff(sel.object, g.ObjectSelector); diff != "" {
			t.Errorf("%s: objectSelector (-want +got):\n%s", w.Name, diff)
		}
		if diff := cmp.Diff(sel.namespace, g.NamespaceSelector); diff != "" {
			t.Errorf("%s: namespaceSelector (-want +got):\n%s", w.Name, diff)
		}
		// What the chart owns is set aside; the rest must be the marker's.
		g.ClientConfig, w.ClientConfig = admissionv1.WebhookClientConfig{}, admissionv1.WebhookClientConfig{}
		g.ObjectSelector, g.NamespaceSelector, g.MatchPolicy = nil, nil, nil
		// The chart states the rules' scope, Namespaced, which the marker
		// cannot; pods are namespaced either way.
		for i := range g.Rules {
			g.Rules[i].Scope = nil
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("the chart's webhook differs from config/webhook/manifests.yaml (-want +got):\n%s", diff)
		}
	}
}
