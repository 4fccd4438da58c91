package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Names the controller and the sidecar chart agree on.
const (
	// AdminPortAnnotation on a pod names the port of its proxy's admin
	// interface when it is not DefaultAdminPort.
	AdminPortAnnotation = "proxy.outrigger.dev/admin-port"
	// DefaultAdminPort is the admin port of a pod without the annotation.
	DefaultAdminPort = 9901
	// DefaultProxyContainer is the proxy container's name when
	// spec.target.container is not set.
	DefaultProxyContainer = "proxy"
	// Finalizer holds a resource until its spec.onDelete policy has been
	// carried out on every pod it acted on.
	Finalizer = "proxy.outrigger.dev/finalizer"
	// MaxTargets caps status.targets. Pods selected beyond it (in pod name
	// order) are counted in status.selected but left alone, and the resource
	// reports Degraded with reason TooManyTargets: the list is the only
	// record of what was done to each pod, so a pod that cannot be recorded
	// is never acted on.
	MaxTargets = 256
)

// Condition types every kind reports.
const (
	// ConditionReady is True when every selected pod is in its desired
	// state.
	ConditionReady = "Ready"
	// ConditionProgressing is True while admin calls remain to be made.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when some pods cannot be acted on.
	ConditionDegraded = "Degraded"
	// ConditionConflict (ProxyRuntimeOverride and ProxyHealthCheck) is True
	// when another resource of the same kind holds a key this one sets on a
	// pod both select.
	ConditionConflict = "Conflict"
)

// Condition reasons.
const (
	ReasonSucceeded         = "Succeeded"
	ReasonInProgress        = "InProgress"
	ReasonNoTargets         = "NoTargets"
	ReasonTargetsFailed     = "TargetsFailed"
	ReasonExpired           = "Expired"
	ReasonDeleting          = "Deleting"
	ReasonRolloutInProgress = "RolloutInProgress"
	ReasonRolloutComplete   = "RolloutComplete"
	ReasonReverting         = "Reverting"
	ReasonAsExpected        = "AsExpected"
	ReasonAdminCallFailed   = "AdminCallFailed"
	ReasonTooManyTargets    = "TooManyTargets"
	ReasonInvalidTarget     = "InvalidTarget"
	ReasonNoConflict        = "NoConflict"
	ReasonKeyConflict       = "KeyConflict"
)

// Target selects the pods whose proxies a resource acts on.
type Target struct {
	// PodSelector selects pods of the resource's own namespace. Of those,
	// the targets are the running pods with a pod IP and a container (or
	// native sidecar init container) named Container. It must not be
	// empty: an empty selector would select every pod of the namespace.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="podSelector must set matchLabels or matchExpressions: an empty selector would select every pod of the namespace"
	PodSelector metav1.LabelSelector `json:"podSelector"`

	// Container is the name of the proxy container; pods without it are
	// not targets.
	// +kubebuilder:default=proxy
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`
}

// Rollout bounds how a resource proceeds through its pods.
type Rollout struct {
	// MaxConcurrent is how many pods are worked on at once: admin calls in
	// flight, and for ProxyDrain the pods draining. Pods are taken in pod
	// name order.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	MaxConcurrent int32 `json:"maxConcurrent,omitempty"`
}

// OnDeletePolicy says what deleting a resource does to the pods it acted on.
// +kubebuilder:validation:Enum=Revert;Keep
type OnDeletePolicy string

const (
	// OnDeleteRevert undoes the resource's changes before it goes.
	OnDeleteRevert OnDeletePolicy = "Revert"
	// OnDeleteKeep leaves the pods as they are.
	OnDeleteKeep OnDeletePolicy = "Keep"
)

// TargetPhase is where one pod stands.
type TargetPhase string

const (
	// PhasePending: selected, waiting for its turn in the rollout.
	PhasePending TargetPhase = "Pending"
	// PhaseInProgress: being worked on (a drain waiting for connections to
	// go, an override whose previous values are recorded but not yet set).
	PhaseInProgress TargetPhase = "InProgress"
	// PhaseApplied: the override or health-check state is in effect.
	PhaseApplied TargetPhase = "Applied"
	// PhaseDrained: the drain is complete (see the message for a timeout).
	PhaseDrained TargetPhase = "Drained"
	// PhaseConflict: every key the resource sets on this pod is held by an
	// older resource, so nothing was set.
	PhaseConflict TargetPhase = "Conflict"
	// PhaseFailed: the last admin call failed; it is retried with backoff.
	PhaseFailed TargetPhase = "Failed"
	// PhaseReverted: the changes were undone (resource deleted, expired, or
	// the pod no longer selected).
	PhaseReverted TargetPhase = "Reverted"
)

// TargetStatus is the part of a pod's status entry every kind shares.
type TargetStatus struct {
	// PodName is the pod's name.
	PodName string `json:"podName"`
	// PodUID identifies the pod: a pod recreated under the same name is a
	// new target.
	PodUID types.UID `json:"podUID"`
	// Phase is where the pod stands.
	Phase TargetPhase `json:"phase"`
	// Attempts counts the admin calls that failed in a row; it is reset on
	// success and paces the retries' backoff.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Message explains the phase: the last error, a timeout, the keys in
	// conflict.
	// +optional
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when Phase last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	// LastAttemptTime is when an admin call for this pod last failed.
	// +optional
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
}

// Counters summarise status.targets (Selected also counts pods beyond
// MaxTargets).
type Counters struct {
	// Selected is the number of target pods the selector matches now.
	// +optional
	Selected int32 `json:"selected"`
	// Pending is the number of pods waiting for their turn.
	// +optional
	Pending int32 `json:"pending"`
	// InProgress is the number of pods being worked on.
	// +optional
	InProgress int32 `json:"inProgress"`
	// Succeeded is the number of pods Applied or Drained.
	// +optional
	Succeeded int32 `json:"succeeded"`
	// Failed is the number of pods whose last admin call failed or that
	// cannot be reached (Failed phase).
	// +optional
	Failed int32 `json:"failed"`
}

// CommonStatus is the status every kind shares.
type CommonStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Degraded, and Conflict where the
	// kind has one.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Counters summarise the targets.
	Counters `json:",inline"`
}
