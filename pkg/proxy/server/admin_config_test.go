package server

import (
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

func TestCompileAdminConfig(t *testing.T) {
	tests := map[string]struct {
		yaml    string
		allowed []string
		denied  []string
		errs    []string
		enforce bool
	}{
		"nothing set": {yaml: `{}`, enforce: true},
		"allow_paths": {
			yaml:    `{allow_paths: [{prefix: /stats}, {exact: /ready}, {safe_regex: {regex: "/clusters.*"}}], ignore_global_conn_limit: true}`,
			allowed: []string{"/stats", "/stats?format=json", "/ready", "/clusters?format=json"},
			denied:  []string{"/ready?x", "/config_dump", "/"},
		},
		"bad matchers and options": {
			yaml: `{allow_paths: [{prefix: /stats}, {safe_regex: {regex: "("}}], socket_options: [{level: 1, name: 8}]}`,
			errs: []string{"admin.allow_paths[1]", "admin.socket_options[0]"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			j, err := yaml.YAMLToJSON([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			a := &bootstrapv3.Admin{}
			if err := protojson.Unmarshal(j, a); err != nil {
				t.Fatal(err)
			}
			cfg, err := compileAdminConfig(a)
			if len(tc.errs) > 0 {
				for _, e := range tc.errs {
					if err == nil || !strings.Contains(err.Error(), e) {
						t.Errorf("error %v, want one naming %s", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.enforceGlobal != tc.enforce {
				t.Errorf("enforceGlobal %v, want %v", cfg.enforceGlobal, tc.enforce)
			}
			allow := (&Server{adminCfg: cfg}).AdminAllowPath()
			if len(tc.allowed)+len(tc.denied) == 0 {
				if allow != nil {
					t.Error("an empty allow_paths must allow every path (nil)")
				}
				return
			}
			for _, p := range tc.allowed {
				if !allow(p) {
					t.Errorf("%s denied", p)
				}
			}
			for _, p := range tc.denied {
				if allow(p) {
					t.Errorf("%s allowed", p)
				}
			}
		})
	}
}
