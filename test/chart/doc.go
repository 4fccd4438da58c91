// Package chart tests the Helm chart in charts/outrigger: helm lint, the
// rendered manifests against golden files, the ClusterRole and CRDs against
// the generated ones in config/, and every rendered object created through a
// real kube-apiserver (envtest) with strict field validation, so that a
// template that does not match the Kubernetes schema fails here rather than
// at install time.
//
// It needs the pinned helm binary (HELM) and the API server assets
// (KUBEBUILDER_ASSETS); `make test-chart` builds both and sets them.
package chart
