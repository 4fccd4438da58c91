package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestClusterRoleMatchesGenerated fails when the chart's ClusterRole grants
// other rules than config/rbac/role.yaml, which controller-gen makes from
// the controller's RBAC markers: a marker added without the chart following
// would leave the installed controller without a right it needs.
func TestClusterRoleMatchesGenerated(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &want); err != nil {
		t.Fatalf("parse config/rbac/role.yaml: %v", err)
	}
	if len(want.Rules) == 0 {
		t.Fatal("config/rbac/role.yaml has no rules")
	}

	objs := decodeObjects(t, mustHelm(t, renderArgs(t, testRelease, testNamespace, "")...))
	rendered := findObject(t, objs, "ClusterRole", testRelease+"-controller")
	var got rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(rendered.Object, &got, true); err != nil {
		t.Fatalf("convert the rendered ClusterRole: %v", err)
	}
	if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/role.yaml (-want +got):\n%s", diff)
	}
}
