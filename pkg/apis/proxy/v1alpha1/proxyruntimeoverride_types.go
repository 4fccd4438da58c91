package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogLevel is a proxy log level, as /logging names it.
// +kubebuilder:validation:Enum=trace;debug;info;warning;error;critical;off
type LogLevel string

// ProxyRuntimeOverrideSpec is what an override sets on each selected pod's
// proxy while it exists: runtime keys (/runtime_modify) and log levels
// (/logging). It is set again on pods selected later and on proxies that
// restart (seen from /server_info's uptime). Deletion, or the end of its
// ttl, restores the values found before it was set.
//
// Two overrides that set the same key on the same pod never fight: the
// older one (by creation time, then by name) holds the key, and the other
// reports a Conflict condition and leaves that key alone on that pod.
// +kubebuilder:validation:XValidation:rule="(has(self.runtime) && size(self.runtime) > 0) || has(self.logging)",message="set runtime or logging: an override with neither does nothing"
// +kubebuilder:validation:XValidation:rule="!has(self.ttl) || self.onDelete == 'Revert'",message="ttl needs onDelete: Revert (an expired override is removed)"
type ProxyRuntimeOverrideSpec struct {
	// Target selects the pods.
	Target Target `json:"target"`

	// Rollout bounds how many pods are changed at once.
	// +kubebuilder:default={}
	// +optional
	Rollout Rollout `json:"rollout,omitzero"`

	// OnDelete Revert restores the previous values on every pod when the
	// override is deleted: a key that existed before is set back to its
	// previous value, a key that did not is removed. Keep leaves them.
	// +kubebuilder:default=Revert
	// +optional
	OnDelete OnDeletePolicy `json:"onDelete,omitempty"`

	// Runtime maps runtime keys to the values to set. Values must not be
	// empty (an empty value would delete the key).
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(k) <= 256 && size(self[k]) > 0 && size(self[k]) <= 1024)",message="runtime keys must be 1 to 256 characters and values 1 to 1024 characters"
	// +optional
	Runtime map[string]string `json:"runtime,omitempty"`

	// Logging sets log levels.
	// +optional
	Logging *LoggingOverride `json:"logging,omitempty"`

	// TTL removes the override's values this long after its creation; the
	// resource then stays, Ready False with reason Expired, until deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="ttl must be more than 0s"
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
}

// LoggingOverride sets log levels through /logging.
// +kubebuilder:validation:XValidation:rule="has(self.level) || (has(self.components) && size(self.components) > 0)",message="set level or components"
type LoggingOverride struct {
	// Level sets every logger (/logging?level=).
	// +optional
	Level LogLevel `json:"level,omitempty"`
	// Components maps logger names to levels (/logging?paths=), applied
	// after Level.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0 && size(k) <= 256 && !k.contains(',') && !k.contains(':') && !k.contains('='))",message="component names must be 1 to 256 characters without ',', ':' or '='"
	// +optional
	Components map[string]LogLevel `json:"components,omitempty"`
}

// RuntimeOverrideTarget is one pod's entry in an override's status.
type RuntimeOverrideTarget struct {
	TargetStatus `json:",inline"`

	// ProxyStartTime is when the proxy whose previous values are on record
	// started, at the latest: the time its /server_info answer arrived
	// less its uptime, to the second. A start certainly later (by more
	// than the uptime's one-second precision and a second for clocks)
	// means it restarted and lost the values.
	// +optional
	ProxyStartTime *metav1.Time `json:"proxyStartTime,omitempty"`
	// ProxyRestartCount is the kubelet's restart count of the proxy
	// container when the values were recorded; a higher one means it
	// restarted.
	// +optional
	ProxyRestartCount int32 `json:"proxyRestartCount,omitempty"`
	// AppliedGeneration is the generation of the spec last set on the pod.
	// +optional
	AppliedGeneration int64 `json:"appliedGeneration,omitempty"`
	// AppliedKeys are the keys this override holds on the pod:
	// runtime:<key>, logging:<logger>, and logging:* for the all-loggers
	// level.
	// +listType=atomic
	// +optional
	AppliedKeys []string `json:"appliedKeys,omitempty"`
	// ConflictingKeys are the keys an older override holds on the pod.
	// +listType=atomic
	// +optional
	ConflictingKeys []string `json:"conflictingKeys,omitempty"`
	// PreviousRuntime holds the values, before the override, of the
	// runtime keys that existed then; they are set back on revert.
	// +optional
	PreviousRuntime map[string]string `json:"previousRuntime,omitempty"`
	// AddedRuntimeKeys did not exist before the override; they are removed
	// on revert.
	// +listType=atomic
	// +optional
	AddedRuntimeKeys []string `json:"addedRuntimeKeys,omitempty"`
	// PreviousLogLevels holds the logger levels before the override: "*"
	// is the level most loggers had, the other entries the exceptions.
	// +optional
	PreviousLogLevels map[string]string `json:"previousLogLevels,omitempty"`
}

// ProxyRuntimeOverrideStatus is the observed state of an override.
type ProxyRuntimeOverrideStatus struct {
	CommonStatus `json:",inline"`

	// ExpiresAt is when the ttl ends.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// Targets has one entry per target pod, sorted by pod name, at most
	// MaxTargets.
	// +listType=map
	// +listMapKey=podUID
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Targets []RuntimeOverrideTarget `json:"targets,omitempty"`
}

// ProxyRuntimeOverride sets runtime keys and log levels on the proxies of
// the selected pods while it exists.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=prto,categories=proxy
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selected`
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Conflict",type=string,JSONPath=`.status.conditions[?(@.type=="Conflict")].status`
// +kubebuilder:printcolumn:name="Expires",type=date,JSONPath=`.status.expiresAt`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProxyRuntimeOverride struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// Spec is what the resource asks for.
	// +required
	Spec ProxyRuntimeOverrideSpec `json:"spec"`
	// Status is what the controller observed and did.
	// +optional
	Status ProxyRuntimeOverrideStatus `json:"status,omitzero"`
}

// ProxyRuntimeOverrideList is a list of ProxyRuntimeOverride.
// +kubebuilder:object:root=true
type ProxyRuntimeOverrideList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitzero"`
	// Items are the resources.
	Items []ProxyRuntimeOverride `json:"items"`
}
