package admin

import (
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

func TestServerInfoEndpoints(t *testing.T) {
	state := func(s adminv3.ServerInfo_State) func(*fakes) {
		return func(f *fakes) { f.state = s }
	}
	runEndpointCases(t, "server_info", map[string]endpointCase{
		"server_info": {
			req:   request{target: "/server_info"},
			calls: []string{"Server.ServerInfo"},
		},
		"server_info-nil": {
			setup: func(f *fakes) { f.info = nil },
			req:   request{target: "/server_info"},
			calls: []string{"Server.ServerInfo"},
		},
		"ready-live": {
			req:   request{target: "/ready"},
			calls: []string{"Server.State"},
		},
		"ready-draining": {
			setup: state(adminv3.ServerInfo_DRAINING),
			req:   request{target: "/ready"},
			calls: []string{"Server.State"},
		},
		"ready-pre_initializing": {
			setup: state(adminv3.ServerInfo_PRE_INITIALIZING),
			req:   request{target: "/ready"},
			calls: []string{"Server.State"},
		},
		"ready-initializing": {
			setup: state(adminv3.ServerInfo_INITIALIZING),
			req:   request{target: "/ready"},
			calls: []string{"Server.State"},
		},
		"hot_restart_version": {
			req: request{target: "/hot_restart_version"},
		},
	})
}
