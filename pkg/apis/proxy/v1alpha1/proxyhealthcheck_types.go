package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HealthCheckState is the health-check answer a ProxyHealthCheck asks for.
// +kubebuilder:validation:Enum=Fail;Ok
type HealthCheckState string

const (
	// HealthCheckFail makes inbound health checks fail
	// (/healthcheck/fail).
	HealthCheckFail HealthCheckState = "Fail"
	// HealthCheckOk undoes a fail (/healthcheck/ok).
	HealthCheckOk HealthCheckState = "Ok"
)

// ProxyHealthCheckSpec is the health-check state to hold on each selected
// pod's proxy. It is set again on pods selected later and on proxies that
// restart. Two health checks selecting the same pod follow the override
// rule: the older one (by creation time, then name) holds the pod, the
// other reports a Conflict condition.
type ProxyHealthCheckSpec struct {
	// Target selects the pods.
	Target Target `json:"target"`

	// Rollout bounds how many pods are changed at once.
	// +kubebuilder:default={}
	// +optional
	Rollout Rollout `json:"rollout,omitzero"`

	// OnDelete Revert calls /healthcheck/ok, when State is Fail, on every
	// pod when the resource is deleted. Keep leaves them failing.
	// +kubebuilder:default=Revert
	// +optional
	OnDelete OnDeletePolicy `json:"onDelete,omitempty"`

	// State is Fail or Ok.
	// +required
	State HealthCheckState `json:"state"`
}

// HealthCheckTarget is one pod's entry in a health check's status.
type HealthCheckTarget struct {
	TargetStatus `json:",inline"`

	// ProxyStartTime is when the proxy that got the state started, at the
	// latest: the time its /server_info answer arrived less its uptime, to
	// the second. A start certainly later means it restarted and lost it.
	// +optional
	ProxyStartTime *metav1.Time `json:"proxyStartTime,omitempty"`
	// ProxyRestartCount is the kubelet's restart count of the proxy
	// container when the state was set; a higher one means it restarted.
	// +optional
	ProxyRestartCount int32 `json:"proxyRestartCount,omitempty"`
	// AppliedState is the state last set on the pod.
	// +optional
	AppliedState HealthCheckState `json:"appliedState,omitempty"`
	// HeldBy names the older ProxyHealthCheck that holds the pod, when the
	// phase is Conflict.
	// +optional
	HeldBy string `json:"heldBy,omitempty"`
}

// ProxyHealthCheckStatus is the observed state of a health check.
type ProxyHealthCheckStatus struct {
	CommonStatus `json:",inline"`

	// Targets has one entry per target pod, sorted by pod name, at most
	// MaxTargets.
	// +listType=map
	// +listMapKey=podUID
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Targets []HealthCheckTarget `json:"targets,omitempty"`
}

// ProxyHealthCheck makes the health checks of the selected pods' proxies
// fail or pass.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=phc,categories=proxy
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selected`
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProxyHealthCheck struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// Spec is what the resource asks for.
	// +required
	Spec ProxyHealthCheckSpec `json:"spec"`
	// Status is what the controller observed and did.
	// +optional
	Status ProxyHealthCheckStatus `json:"status,omitzero"`
}

// ProxyHealthCheckList is a list of ProxyHealthCheck.
// +kubebuilder:object:root=true
type ProxyHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// Items are the resources.
	Items []ProxyHealthCheck `json:"items"`
}
