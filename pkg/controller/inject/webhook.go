package inject

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the webhook server serves the injection webhook.
const Path = "/mutate--v1-pod"

// The webhook configuration controller-gen writes to config/webhook. It has
// no objectSelector (controller-gen cannot express one): the Helm chart adds
// matchLabels {proxy.outrigger.dev/inject: "true"}.
// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=inject.proxy.outrigger.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=10

// Handler is the admission handler: it injects the proxy into the labelled
// pods created through the API server.
type Handler struct {
	cfg Config
}

// NewHandler returns a handler injecting proxies made from cfg.
func NewHandler(cfg Config) *Handler {
	return &Handler{cfg: cfg}
}

// Register serves the handler at Path on the manager's webhook server.
func Register(srv webhook.Server, cfg Config) {
	srv.Register(Path, &webhook.Admission{Handler: NewHandler(cfg)})
}

// podKind is the only kind the webhook is configured for.
var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// Handle answers one admission request: a JSON patch adding the proxy to a
// labelled pod being created, "allowed" with no patch for anything else,
// and a 400 denial with the reason for an object that is not a readable pod.
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
	if !Wanted(&pod) {
		return admission.Allowed(fmt.Sprintf("no %s=%s label: nothing to inject", InjectLabel, InjectLabelValue))
	}
	if !Inject(&pod, h.cfg) {
		return admission.Allowed(fmt.Sprintf("the pod already has a %q container", ContainerName))
	}
	mutated, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode pod: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}
