package httpfiltertest

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// ParseYAML reads y, a configuration message in YAML as a bootstrap
// writes it, into m, and returns m; the test fails on a malformed one.
func ParseYAML[M proto.Message](t testing.TB, y string, m M) M {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, m); err != nil {
		t.Fatal(err)
	}
	return m
}
