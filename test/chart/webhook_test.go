package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
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
	if len(want.Webhooks) != 1 {
		t.Fatalf("config/webhook/manifests.yaml has %d webhooks, want 1", len(want.Webhooks))
	}

	objs := decodeObjects(t, mustHelm(t, renderArgs(t, testRelease, testNamespace, "")...))
	rendered := findObject(t, objs, "MutatingWebhookConfiguration", testRelease+"-inject")
	var got admissionv1.MutatingWebhookConfiguration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(rendered.Object, &got, true); err != nil {
		t.Fatalf("convert the rendered webhook configuration: %v", err)
	}
	if len(got.Webhooks) != 1 {
		t.Fatalf("the chart renders %d webhooks, want 1", len(got.Webhooks))
	}
	g, w := got.Webhooks[0], want.Webhooks[0]
	if g.ClientConfig.Service == nil || g.ClientConfig.Service.Path == nil || *g.ClientConfig.Service.Path != *w.ClientConfig.Service.Path {
		t.Errorf("the chart's webhook path is %v, want %s", g.ClientConfig.Service, *w.ClientConfig.Service.Path)
	}
	if g.ObjectSelector == nil || g.ObjectSelector.MatchLabels["proxy.outrigger.dev/inject"] != "true" {
		t.Errorf("the chart's webhook has no objectSelector on the injection label: %v", g.ObjectSelector)
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
