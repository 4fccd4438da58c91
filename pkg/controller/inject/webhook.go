package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The webhook's two entries, one path each, so that the handler knows
// which selector matched: the API server does not send the namespace's
// labels with a pod.
const (
	// Path serves the entry for the pods labelled InjectLabel: "true".
	Path = "/mutate--v1-pod"
	// NamespacePath serves the entry for the pods of the namespaces
	// labelled InjectLabel: "true"; a pod reaching it is injected unless
	// it opts out.
	NamespacePath = "/mutate-namespace--v1-pod"
)

// The webhook configuration controller-gen writes to config/webhook: the
// two entries, without their selectors (controller-gen cannot express
// them). The Helm chart adds them: objectSelector InjectLabel=true on the
// first; namespaceSelector InjectLabel=true and objectSelector InjectLabel
// not in (true, false) on the second, so that no pod goes to both.
// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=inject.proxy.outrigger.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=10
// +kubebuilder:webhook:path=/mutate-namespace--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=namespace.inject.proxy.outrigger.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=10

// Event of a refusal.
const (
	// ReasonInjectionRefused is the reason of the Warning event recorded
	// for a pod the webhook refuses.
	ReasonInjectionRefused = "InjectionRefused"
	actionInject           = "Inject"
)

// Handler is the admission handler: it injects the proxy into the pods
// created through the API server that ask for it, and refuses those it
// cannot inject safely.
type Handler struct {
	cfg Config
	// namespaceInjects says that the handler serves NamespacePath.
	namespaceInjects bool
	// recorder records refusals; nil records none.
	recorder events.EventRecorder
}

// NewHandler returns a handler injecting proxies made from cfg into the
// pods labelled for it (namespaceInjects false) or into every pod that
// does not opt out (namespaceInjects true, for the pods of labelled
// namespaces). Refusals are recorded with recorder, if not nil.
func NewHandler(cfg Config, namespaceInjects bool, recorder events.EventRecorder) *Handler {
	return &Handler{cfg: cfg, namespaceInjects: namespaceInjects, recorder: recorder}
}

// Register serves the handlers at Path and NamespacePath on the manager's
// webhook server.
func Register(srv webhook.Server, cfg Config, recorder events.EventRecorder) {
	srv.Register(Path, &webhook.Admission{Handler: NewHandler(cfg, false, recorder)})
	srv.Register(NamespacePath, &webhook.Admission{Handler: NewHandler(cfg, true, recorder)})
}

// podKind is the only kind the webhook is configured for.
var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// Handle answers one admission request: a JSON patch adding the proxy to a
// pod being created that asks for one, "allowed" with no patch for anything
// else, a 403 denial naming the annotation for a pod that cannot be
// injected safely (such a pod asked for a proxy: creating it without one
// would leave it unprotected and unobserved without anyone knowing), and a
// 400 denial with the reason for an object that is not a readable pod.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only pod creations are injected")
	}
	if req.Kind.Group != podKind.Group || req.Kind.Kind != podKind.Kind {
		return admission.Allowed(fmt.Sprintf("not a pod (%s): nothing to inject", req.Kind.Kind))
	}
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode pod: the request has no object"))
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode pod: %w", err))
	}
	wanted, err := Wanted(&pod, h.namespaceInjects)
	if err == nil && !wanted {
		return admission.Allowed("the pod does not ask for a proxy, or opts out: nothing to inject")
	}
	var changed bool
	if err == nil {
		changed, err = Inject(&pod, h.cfg)
	}
	if err != nil {
		h.recordRefusal(req, &pod, err)
		return admission.Denied("proxy injection refused: " + err.Error())
	}
	if !changed {
		return admission.Allowed("the pod is already injected")
	}
	mutated, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode pod: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// recordRefusal records a Warning event for a refused pod. The pod is not
// created, so it has no UID to hang the event on: the event goes on the
// pod's controller (the ReplicaSet, Job, ... whose events `kubectl
// describe` shows beside its own FailedCreate) or, for a pod created
// directly, on a reference to the pod by name in its namespace (seen with
// `kubectl events -n NAMESPACE`), where the creator also got the denial.
// A dry run records nothing: the webhook declares no side effects.
func (h *Handler) recordRefusal(req admission.Request, pod *corev1.Pod, err error) {
	if h.recorder == nil || (req.DryRun != nil && *req.DryRun) {
		return
	}
	namespace := pod.Namespace
	if namespace == "" {
		namespace = req.Namespace
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: pod.Name}
	if ref.Name == "" {
		ref.Name = pod.GenerateName
	}
	if owner := metav1.GetControllerOf(pod); owner != nil {
		ref = &corev1.ObjectReference{
			APIVersion: owner.APIVersion, Kind: owner.Kind, Namespace: namespace, Name: owner.Name, UID: owner.UID,
		}
	}
	h.recorder.Eventf(ref, nil, corev1.EventTypeWarning, ReasonInjectionRefused, actionInject,
		"proxy injection refused for pod %s: %s", podName(pod), err)
}

// podName names a pod being created: its name, or its generateName
// followed by "*".
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "*"
}
