package inject

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
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
	optOut := appPod()
	optOut.Annotations = map[string]string{InjectLabel: "false"}
	badCPU := appPod()
	badCPU.Annotations = map[string]string{AnnotationProxyCPU: "lots"}
	already := appPod()
	if _, err := Inject(already, DefaultConfig()); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		namespace bool // the handler of NamespacePath
		req       admission.Request
		allowed   bool
		code      int32  // of a denial
		message   string // part of the answer's message
		patched   bool
	}{
		"labelled pod":                  {req: request(admissionv1.Create, "Pod", podJSON(t, appPod())), allowed: true, patched: true},
		"unlabelled pod":                {req: request(admissionv1.Create, "Pod", podJSON(t, unlabelled)), allowed: true, message: "does not ask for a proxy"},
		"unlabelled pod, namespace":     {namespace: true, req: request(admissionv1.Create, "Pod", podJSON(t, unlabelled)), allowed: true, patched: true},
		"opt-out annotation":            {req: request(admissionv1.Create, "Pod", podJSON(t, optOut)), allowed: true, message: "opts out"},
		"opt-out annotation, namespace": {namespace: true, req: request(admissionv1.Create, "Pod", podJSON(t, optOut)), allowed: true, message: "opts out"},
		"already injected":              {req: request(admissionv1.Create, "Pod", podJSON(t, already)), allowed: true, message: "already injected"},
		"own proxy":                     {req: request(admissionv1.Create, "Pod", podJSON(t, withProxy)), code: http.StatusForbidden, message: `proxy injection refused: proxy.outrigger.dev/inject: the pod already has a container named "proxy"`},
		"bad annotation":                {req: request(admissionv1.Create, "Pod", podJSON(t, badCPU)), code: http.StatusForbidden, message: `proxy injection refused: proxy.outrigger.dev/proxy-cpu: "lots" is not a quantity`},
		"update":                        {req: request(admissionv1.Update, "Pod", podJSON(t, appPod())), allowed: true, message: "only pod creations"},
		"not a pod":                     {req: request(admissionv1.Create, "ConfigMap", []byte(`{}`)), allowed: true, message: "not a pod (ConfigMap)"},
		"undecodable":                   {req: request(admissionv1.Create, "Pod", []byte(`{"spec": [`)), code: http.StatusBadRequest, message: "decode pod: "},
		"wrong field type":              {req: request(admissionv1.Create, "Pod", []byte(`{"spec": {"containers": "app"}}`)), code: http.StatusBadRequest, message: "decode pod: json: cannot unmarshal"},
		"no object":                     {req: request(admissionv1.Create, "Pod", nil), code: http.StatusBadRequest, message: "decode pod: the request has no object"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := NewHandler(DefaultConfig(), tc.namespace, nil).Handle(t.Context(), tc.req)
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

// recorded is one event given to a recorder.
type recorded struct {
	regarding                       *corev1.ObjectReference
	eventType, reason, action, note string
}

// recorder keeps the events it is given.
type recorder struct {
	events []recorded
}

// Eventf implements events.EventRecorder.
func (r *recorder) Eventf(regarding, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	ref, _ := regarding.(*corev1.ObjectReference)
	r.events = append(r.events, recorded{ref, eventType, reason, action, fmt.Sprintf(note, args...)})
}

// TestHandleRefusalEvent checks the event of a refused pod: on its
// controller when it has one, else on the pod by name, and none for a dry
// run or a pod admitted.
func TestHandleRefusalEvent(t *testing.T) {
	bad := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := appPod()
		p.Annotations = map[string]string{AnnotationLogLevel: "loud"}
		if edit != nil {
			edit(p)
		}
		return p
	}
	owned := func(p *corev1.Pod) {
		p.Name, p.GenerateName = "", "shop-7d4b9-"
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller", UID: "u0"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop-7d4b9", UID: "u1", Controller: ptr.To(true)},
		}
	}
	cases := map[string]struct {
		pod    *corev1.Pod
		dryRun bool
		want   *corev1.ObjectReference // nil: no event
		note   string
	}{
		"owned pod": {
			pod:  bad(owned),
			want: &corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "shop-7d4b9", UID: "u1"},
			note: `proxy injection refused for pod shop-7d4b9-*: proxy.outrigger.dev/log-level: "loud" is not a log level`,
		},
		"bare pod": {
			pod:  bad(nil),
			want: &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "app"},
			note: `proxy injection refused for pod app: proxy.outrigger.dev/log-level:`,
		},
		"dry run":  {pod: bad(nil), dryRun: true},
		"good pod": {pod: appPod()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			req := request(admissionv1.Create, "Pod", podJSON(t, tc.pod))
			req.DryRun = ptr.To(tc.dryRun)
			NewHandler(DefaultConfig(), false, rec).Handle(t.Context(), req)
			if tc.want == nil {
				if len(rec.events) != 0 {
					t.Fatalf("events %+v, want none", rec.events)
				}
				return
			}
			if len(rec.events) != 1 {
				t.Fatalf("%d events, want 1", len(rec.events))
			}
			e := rec.events[0]
			if diff := cmp.Diff(tc.want, e.regarding); diff != "" {
				t.Errorf("regarding (-want +got):\n%s", diff)
			}
			if e.eventType != corev1.EventTypeWarning || e.reason != "InjectionRefused" || e.action != "Inject" || !strings.HasPrefix(e.note, tc.note) {
				t.Errorf("event %s %s %s %q: want Warning InjectionRefused Inject %q...", e.eventType, e.reason, e.action, e.note, tc.note)
			}
		})
	}
}

// TestHandlePatch checks that the patch of a labelled pod touches only the
// annotations and the init containers (the diff library chooses the exact
// operations; that the API server's result is the injected pod is
// TestWebhook's).
func TestHandlePatch(t *testing.T) {
	resp := NewHandler(DefaultConfig(), false, nil).Handle(t.Context(), request(admissionv1.Create, "Pod", podJSON(t, appPod())))
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

// FuzzHandle feeds arbitrary objects to both handlers: they must answer
// every one (never panic), deny only with 400 (unreadable) or 403 (a
// refusal, which an injection would have been), and patch only pods that
// ask for a proxy and are not injected yet.
func FuzzHandle(f *testing.F) {
	f.Add([]byte(`{"metadata":{"labels":{"proxy.outrigger.dev/inject":"true"}},"spec":{"containers":[{"name":"a"}]}}`), false)
	f.Add([]byte(`{"metadata":{"labels":{"proxy.outrigger.dev/inject":"true"}},"spec":{"initContainers":[{"name":"proxy"}]}}`), false)
	f.Add([]byte(`{"spec": [`), true)
	f.Add([]byte(`null`), true)
	f.Add([]byte(``), false)
	f.Add([]byte(`{"metadata":{"annotations":{"proxy.outrigger.dev/capture":"true","proxy.outrigger.dev/include-inbound-ports":"80,x"}},"spec":{"containers":[{"name":"a"}]}}`), true)
	f.Fuzz(func(t *testing.T, raw []byte, namespace bool) {
		resp := NewHandler(DefaultConfig(), namespace, nil).Handle(t.Context(), request(admissionv1.Create, "Pod", raw))
		if !resp.Allowed {
			if resp.Result == nil || resp.Result.Message == "" ||
				(resp.Result.Code != http.StatusBadRequest && resp.Result.Code != http.StatusForbidden) {
				t.Fatalf("denial without a 400 or 403 and a reason: %+v", resp.Result)
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
		if wanted, err := Wanted(&pod, namespace); !wanted || err != nil || Injected(&pod) {
			t.Fatalf("patched a pod that does not ask for a proxy or is already injected: %s", raw)
		}
	})
}
