package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every kind in this package.
const GroupName = "proxy.outrigger.dev"

// GroupVersion is the group and version of this package's kinds. It is a
// value, never modified.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// AddToScheme registers this package's kinds with s. It is a plain function
// rather than the usual package-level SchemeBuilder so that the package holds
// no mutable state.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ProxyDrain{}, &ProxyDrainList{},
		&ProxyRuntimeOverride{}, &ProxyRuntimeOverrideList{},
		&ProxyHealthCheck{}, &ProxyHealthCheckList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
