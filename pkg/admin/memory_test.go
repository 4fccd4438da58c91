package admin

import "testing"

func TestMemoryEndpoint(t *testing.T) {
	runEndpointCases(t, "memory", map[string]endpointCase{
		"get": {
			req:   request{target: "/memory"},
			calls: []string{"Memory.Memory"},
		},
		"post": { // the older build of the specification
			req:   request{method: "POST", target: "/memory"},
			calls: []string{"Memory.Memory"},
		},
		"nil": {
			setup: func(f *fakes) { f.memory = nil },
			req:   request{target: "/memory"},
			calls: []string{"Memory.Memory"},
		},
	})
}
