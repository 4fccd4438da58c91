// Package kubectl is the kubectl-outrigger plugin: commands that show and
// change the proxy of one pod, or survey every injected pod, through the
// proxy's admin interface.
//
// The plugin finds pods through the API server (the kubeconfig, context
// and namespace kubectl would use) and reaches a pod's admin interface
// through the same admin client and transports as the controller
// (pkg/controller/adminclient): a port-forward through the API server by
// default, which reaches the admin's loopback address inside the pod, or
// the pod IP directly with --transport direct.
package kubectl
