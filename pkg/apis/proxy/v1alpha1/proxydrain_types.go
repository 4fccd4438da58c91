package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProxyDrainSpec is what a drain does to each selected pod's proxy, in this
// order: fail health checks (optional), wait the delay, drain listeners,
// wait until the downstream connections are few enough or a timeout passes,
// then quit (optional). A pod is drained once: its entry in status.targets,
// keyed by pod UID, records each step before the next is taken.
// +kubebuilder:validation:XValidation:rule="!has(self.healthCheckFailDelay) || self.failHealthChecks",message="healthCheckFailDelay needs failHealthChecks: true"
type ProxyDrainSpec struct {
	// Target selects the pods. It cannot be changed: a drain is an
	// operation on the pods it selected; create another one for other pods.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="target is immutable"
	Target Target `json:"target"`

	// Rollout bounds how many pods drain at once.
	// +kubebuilder:default={}
	// +optional
	Rollout Rollout `json:"rollout,omitzero"`

	// OnDelete Revert makes health checks pass again (/healthcheck/ok) on
	// the pods where they were failed; drained listeners stay drained, as a
	// drain cannot be undone. Keep leaves the pods as they are.
	// +kubebuilder:default=Keep
	// +optional
	OnDelete OnDeletePolicy `json:"onDelete,omitempty"`

	// FailHealthChecks calls /healthcheck/fail first, so that readiness
	// probes fail and the pod leaves its Services' endpoints before its
	// listeners stop.
	// +kubebuilder:default=false
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="failHealthChecks is immutable"
	// +optional
	FailHealthChecks bool `json:"failHealthChecks"`

	// HealthCheckFailDelay is the wait between failing health checks and
	// draining listeners, to let endpoints and load balancers catch up.
	// Needs FailHealthChecks.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="healthCheckFailDelay must be between 0s and 1h"
	// +optional
	HealthCheckFailDelay *metav1.Duration `json:"healthCheckFailDelay,omitempty"`

	// InboundOnly drains only the listeners whose traffic_direction is
	// INBOUND (/drain_listeners?inboundonly), so the application keeps its
	// outbound traffic while it finishes.
	// +kubebuilder:default=false
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="inboundOnly is immutable"
	// +optional
	InboundOnly bool `json:"inboundOnly"`

	// Graceful runs the proxy's drain sequence (--drain-time-s,
	// --drain-strategy) before the listeners close
	// (/drain_listeners?graceful).
	// +kubebuilder:default=false
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="graceful is immutable"
	// +optional
	Graceful bool `json:"graceful"`

	// Completion says when a pod's drain is over.
	// +kubebuilder:default={}
	// +optional
	Completion DrainCompletion `json:"completion,omitzero"`

	// QuitAfterDrain calls /quitquitquit once the drain is over, so the
	// proxy exits.
	// +kubebuilder:default=false
	// +optional
	QuitAfterDrain bool `json:"quitAfterDrain"`
}

// DrainCompletion says when a pod's drain is over: when its downstream
// active connections, excluding the admin listener's, are at most
// ActiveConnections, or when Timeout has passed since /drain_listeners.
type DrainCompletion struct {
	// ActiveConnections is the count of downstream connections (the sum of
	// listener.<name>.downstream_cx_active, admin excluded) at or below
	// which the drain is complete.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	ActiveConnections int64 `json:"activeConnections"`

	// Timeout completes the drain even if connections remain.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('24h')",message="timeout must be more than 0s and at most 24h"
	// +optional
	Timeout metav1.Duration `json:"timeout,omitzero"`
}

// DrainStep is the step of a pod's drain the controller is at.
type DrainStep string

const (
	// DrainStepFailHealthChecks: /healthcheck/fail is next.
	DrainStepFailHealthChecks DrainStep = "FailHealthChecks"
	// DrainStepDelay: waiting healthCheckFailDelay.
	DrainStepDelay DrainStep = "Delay"
	// DrainStepDrainListeners: /drain_listeners is next.
	DrainStepDrainListeners DrainStep = "DrainListeners"
	// DrainStepWaitForConnections: polling the active connections.
	DrainStepWaitForConnections DrainStep = "WaitForConnections"
	// DrainStepQuit: /quitquitquit is next.
	DrainStepQuit DrainStep = "Quit"
	// DrainStepDone: nothing left to do.
	DrainStepDone DrainStep = "Done"
)

// DrainTarget is one pod's entry in a drain's status.
type DrainTarget struct {
	TargetStatus `json:",inline"`

	// Step is the step the pod is at.
	// +optional
	Step DrainStep `json:"step,omitempty"`
	// HealthChecksFailedAt is when /healthcheck/fail succeeded.
	// +optional
	HealthChecksFailedAt *metav1.Time `json:"healthChecksFailedAt,omitempty"`
	// DrainRequestedAt is recorded before /drain_listeners is called, so
	// that a controller restarted at that moment never calls it twice.
	// +optional
	DrainRequestedAt *metav1.Time `json:"drainRequestedAt,omitempty"`
	// DrainStartedAt is when /drain_listeners succeeded.
	// +optional
	DrainStartedAt *metav1.Time `json:"drainStartedAt,omitempty"`
	// ActiveConnections is the latest count of downstream connections.
	// +optional
	ActiveConnections *int64 `json:"activeConnections,omitempty"`
	// TimedOut is set when the drain completed on its timeout.
	// +optional
	TimedOut bool `json:"timedOut,omitempty"`
	// QuitRequestedAt is recorded before /quitquitquit is called.
	// +optional
	QuitRequestedAt *metav1.Time `json:"quitRequestedAt,omitempty"`
	// HealthChecksRestored is set when onDelete Revert made health checks
	// pass again.
	// +optional
	HealthChecksRestored bool `json:"healthChecksRestored,omitempty"`
}

// ProxyDrainStatus is the observed state of a drain.
type ProxyDrainStatus struct {
	CommonStatus `json:",inline"`

	// Targets has one entry per target pod, sorted by pod name, at most
	// MaxTargets.
	// +listType=map
	// +listMapKey=podUID
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Targets []DrainTarget `json:"targets,omitempty"`
}

// ProxyDrain drains the proxies of the selected pods, a few at a time.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pdrain,categories=proxy
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selected`
// +kubebuilder:printcolumn:name="Drained",type=integer,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProxyDrain struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// Spec is what the resource asks for.
	// +required
	Spec ProxyDrainSpec `json:"spec"`
	// Status is what the controller observed and did.
	// +optional
	Status ProxyDrainStatus `json:"status,omitzero"`
}

// ProxyDrainList is a list of ProxyDrain.
// +kubebuilder:object:root=true
type ProxyDrainList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// Items are the resources.
	Items []ProxyDrain `json:"items"`
}
