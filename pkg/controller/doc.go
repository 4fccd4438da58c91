// Package controller turns the proxy.outrigger.dev resources into admin
// calls on the proxies of the pods they select: one reconciler per kind
// (DrainReconciler, RuntimeOverrideReconciler, HealthCheckReconciler),
// registered together by Setup.
//
// The reconcilers share one way of working. The targets of a resource are
// the running pods of its namespace that match spec.target.podSelector,
// have a pod IP and the proxy container; the admin port is the pod's
// proxy.outrigger.dev/admin-port annotation, else 9901. Each target has an
// entry in status.targets, keyed by pod UID: the entry is the record of
// what was done to the pod, so the resource is read live (not from the
// cache) at the start of each reconcile and the status is written with an
// optimistic lock. At most spec.rollout.maxConcurrent pods are worked on at
// once. A failed admin call marks the pod Failed (the resource Degraded)
// and is retried with exponential backoff. A finalizer holds a deleted
// resource until spec.onDelete has been carried out.
package controller

// Least privilege: the controller reads pods, opens port-forwards to them,
// records events, manages its own resources, and elects a leader.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/portforward,verbs=get;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=proxy.outrigger.dev,resources=proxydrains;proxyruntimeoverrides;proxyhealthchecks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=proxy.outrigger.dev,resources=proxydrains/status;proxyruntimeoverrides/status;proxyhealthchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=proxy.outrigger.dev,resources=proxydrains/finalizers;proxyruntimeoverrides/finalizers;proxyhealthchecks/finalizers,verbs=update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
