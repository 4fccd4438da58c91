package inject

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// request is an admission request for a pod given as raw JSON.
func request(op admissionv1.Operation, kind string, raw []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid-1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: kind},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "shop",
		Operation: op,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// podJSON encodes a pod.
func podJSON(t testing.TB, pod *corev1.Pod) []byte {
	t.Helper()
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHandle checks every kind of answer the handler gives.
func TestHandle(t *testing.T) {
	unlabelled := appPod()
	delete(unlabelled.Labels, InjectLabel)
	withProxy := appPod()
	withProxy.Spec.Containers = append(withProxy.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy"})

	cases := map[string]struct {
		req     admission.Request
		allowed bool
		code    int32  // of a denial
		message string // part of the answer's message
		patched bool
	}{
		"labelled pod":     {req: request(admissionv1.Create, "Pod", podJSON(t, appPod())), allowed: true, patched: true},
		"unlabelled pod":   {req: request(admissionv1.Create, "Pod", podJSON(t, unlabelled)), allowed: true, message: "no proxy.outrigger.dev/inject=true label"},
		"own proxy":        {req: request(admissionv1.Create, "Pod", podJSON(t, withProxy)), allowed: true, message: `already has a "proxy" container`},
		"update":           {req: request(admissionv1.Update, "Pod", podJSON(t, appPod())), allowed: true, message: "only pod creations"},
		"not a pod":        {req: request(admissionv1.Create, "ConfigMap", []byte(`{}`)), allowed: true, message: "not a pod (ConfigMap)"},
		"undecodable":      {req: request(admissionv1.Create, "Pod", []byte(`{"spec": [`)), code: http.StatusBadRequest, message: "decode pod: "},
		"wrong field type": {req: request(admissionv1.Create, "Pod", []byte(`{"spec": {"containers": "app"}}`)), code: http.StatusBadRequest, message: "decode pod: json: cannot unmarshal"},
		"no object":        {req: request(admissionv1.Create, "Pod", nil), code: http.StatusBadRequest, message: "decode pod: the request has no object"},
	}
	h := NewHandler(DefaultConfig())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := h.Handle(t.Context(), tc.req)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			msg := ""
			if resp.Result != nil {
				msg = resp.Result.Message
				if !tc.allowed && resp.Result.Code != tc.code {
					t.Errorf("code %d, want %d", resp.Result.Code, tc.code)
				}
			}
			if !strings.Contains(msg, tc.message) {
				t.Errorf("message %q does not contain %q", msg, tc.message)
			}
			if got := len(resp.Patches) > 0; got != tc.patched {
				t.Errorf("patched = %v (%v), want %v", got, resp.Patches, tc.patched)
			}
		})
	}
}

// TestHandlePatch checks that the patch of a labelled pod touches only the
// annotations and the init containers (the diff library chooses the exact
// operations; that the API server's result is the injected pod is
// TestWebhook's).
func TestHandlePatch(t *testing.T) {
	resp := NewHandler(DefaultConfig()).Handle(t.Context(), request(admissionv1.Create, "Pod", podJSON(t, appPod())))
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	var annotations, initContainers bool
	for _, op := range resp.Patches {
		switch {
		case strings.HasPrefix(op.Path, "/metadata/annotations"):
			annotations = true
		case strings.HasPrefix(op.Path, "/spec/initContainers"):
			initContainers = true
		default:
			t.Errorf("patch operation %s %s touches neither the annotations nor the init containers", op.Operation, op.Path)
		}
	}
	if !annotations || !initContainers {
		t.Errorf("patch %v: want the annotations and the init containers changed", resp.Patches)
	}
}

// FuzzHandle feeds arbitrary objects to the handler: it must answer every
// one (never panic), deny only with 400, and patch only labelled pods.
func FuzzHandle(f *testing.F) {
	f.Add([]byte(`{"metadata":{"labels":{"proxy.outrigger.dev/inject":"true"}},"spec":{"containers":[{"name":"a"}]}}`))
	f.Add([]byte(`{"metadata":{"labels":{"proxy.outrigger.dev/inject":"true"}},"spec":{"initContainers":[{"name":"proxy"}]}}`))
	f.Add([]byte(`{"spec": [`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	h := NewHandler(DefaultConfig())
	f.Fuzz(func(t *testing.T, raw []byte) {
		resp := h.Handle(t.Context(), request(admissionv1.Create, "Pod", raw))
		if !resp.Allowed {
			if resp.Result == nil || resp.Result.Code != http.StatusBadRequest || resp.Result.Message == "" {
				t.Fatalf("denial without a 400 and a reason: %+v", resp.Result)
			}
			return
		}
		if len(resp.Patches) == 0 {
			return
		}
		var pod corev1.Pod
		if err := json.Unmarshal(raw, &pod); err != nil {
			t.Fatalf("patched an undecodable object: %v", err)
		}
		if !Wanted(&pod) || Injected(&pod) {
			t.Fatalf("patched a pod that is unlabelled or already injected: %s", raw)
		}
	})
}
