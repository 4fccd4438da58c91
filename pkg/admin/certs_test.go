package admin

import (
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

func TestCertsEndpoint(t *testing.T) {
	runEndpointCases(t, "certs", map[string]endpointCase{
		"certs": {
			req:   request{target: "/certs"},
			calls: []string{"Certs.Certificates"},
		},
		"none": {
			setup: func(f *fakes) { f.certs = &adminv3.Certificates{} },
			req:   request{target: "/certs"},
			calls: []string{"Certs.Certificates"},
		},
		"nil": {
			setup: func(f *fakes) { f.certs = nil },
			req:   request{target: "/certs"},
			calls: []string{"Certs.Certificates"},
		},
	})
}
