package inject

import (
	"path/filepath"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	// The typed configs the bootstrap names, registered for protojson.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// TestDefaultBootstrap checks that the bootstrap is a valid Envoy v3
// bootstrap with the ports given, and keeps its text in a golden file. That
// the proxy runs it as intended is the e2e suite's probe_listener_test.go.
func TestDefaultBootstrap(t *testing.T) {
	cases := map[string]struct {
		admin, probe int32
	}{
		"default ports": {admin: 9901, probe: 9902},
		"custom ports":  {admin: 15000, probe: 15021},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			text := DefaultBootstrap(tc.admin, tc.probe)
			js, err := yaml.YAMLToJSON([]byte(text))
			if err != nil {
				t.Fatalf("not YAML: %v", err)
			}
			var b bootstrapv3.Bootstrap
			if err := protojson.Unmarshal(js, &b); err != nil {
				t.Fatalf("not a v3 bootstrap: %v", err)
			}
			if err := b.ValidateAll(); err != nil {
				t.Fatalf("invalid bootstrap: %v", err)
			}
			if got := b.GetAdmin().GetAddress().GetSocketAddress(); got.GetAddress() != "127.0.0.1" || got.GetPortValue() != uint32(tc.admin) {
				t.Errorf("admin address %v: want 127.0.0.1:%d", got, tc.admin)
			}
			ls := b.GetStaticResources().GetListeners()
			if len(ls) != 1 {
				t.Fatalf("%d listeners, want 1", len(ls))
			}
			if got := ls[0].GetAddress().GetSocketAddress(); got.GetAddress() != "0.0.0.0" || got.GetPortValue() != uint32(tc.probe) {
				t.Errorf("probe address %v: want 0.0.0.0:%d", got, tc.probe)
			}
			cs := b.GetStaticResources().GetClusters()
			if len(cs) != 1 || cs[0].GetName() != "admin" {
				t.Fatalf("clusters %v: want the one admin cluster", cs)
			}
			ep := cs[0].GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			if ep.GetAddress() != "127.0.0.1" || ep.GetPortValue() != uint32(tc.admin) {
				t.Errorf("admin cluster endpoint %v: want 127.0.0.1:%d", ep, tc.admin)
			}
			golden.Check(t, filepath.Join("testdata", "bootstrap-"+slug(name)+".yaml"), []byte(text))
		})
	}
}
