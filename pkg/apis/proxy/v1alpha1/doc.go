// Package v1alpha1 holds the proxy.outrigger.dev/v1alpha1 API: the custom
// resources operators apply to act on the sidecar proxies of selected pods.
//
// The three kinds share one shape. spec.target selects pods of the
// resource's own namespace, spec.rollout bounds how many of them are worked
// on at once, and spec.onDelete says whether deleting the resource undoes
// what it did (a finalizer enforces it). The status reports the observed
// generation, the Ready, Progressing and Degraded conditions, counters, and a
// capped list of per-pod targets sorted by pod name.
//
//   - ProxyDrain fails health checks, drains listeners and waits for the
//     downstream connections to go, once per pod.
//   - ProxyRuntimeOverride sets runtime keys and log levels, and keeps them
//     set on new and restarted proxies while it exists.
//   - ProxyHealthCheck makes health checks fail or pass.
//
// +kubebuilder:object:generate=true
// +groupName=proxy.outrigger.dev
package v1alpha1
