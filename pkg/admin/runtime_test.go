package admin

import (
	"net/http"
	"testing"
)

func TestRuntimeEndpoints(t *testing.T) {
	runEndpointCases(t, "runtime", map[string]endpointCase{
		"runtime": {
			req:   request{target: "/runtime"},
			calls: []string{"Runtime.LayerNames", "Runtime.Entries"},
		},
		"runtime-query-ignored": {
			req:   request{target: "/runtime?format=json"},
			calls: []string{"Runtime.LayerNames", "Runtime.Entries"},
		},
		"runtime-empty": {
			setup: func(f *fakes) { f.layers, f.entries = nil, nil },
			req:   request{target: "/runtime"},
			calls: []string{"Runtime.LayerNames", "Runtime.Entries"},
		},
		"runtime-entry-without-layer-values": {
			setup: func(f *fakes) { f.layers, f.entries = nil, []RuntimeEntry{{Key: "k", FinalValue: "v"}} },
			req:   request{target: "/runtime"},
			calls: []string{"Runtime.LayerNames", "Runtime.Entries"},
		},
		"modify-query": {
			req:   request{method: "POST", target: "/runtime_modify?a=1&b=two%20words&a=ignored"},
			calls: []string{"Runtime.HasAdminLayer", `Runtime.Modify a="1" b="two words"`},
		},
		"modify-delete": {
			req:   request{method: "POST", target: "/runtime_modify?a="},
			calls: []string{"Runtime.HasAdminLayer", `Runtime.Modify a=""`},
		},
		"modify-form-body": {
			req:   request{method: "POST", target: "/runtime_modify", body: "x=1&y=%3C2%3E", header: formHeader()},
			calls: []string{"Runtime.HasAdminLayer", `Runtime.Modify x="1" y="<2>"`},
		},
		"modify-query-wins-over-body": {
			req:   request{method: "POST", target: "/runtime_modify?q=1", body: "x=1", header: formHeader()},
			calls: []string{"Runtime.HasAdminLayer", `Runtime.Modify q="1"`},
		},
		"modify-body-not-a-form": {
			req: request{method: "POST", target: "/runtime_modify", body: "x=1",
				header: http.Header{"Content-Type": {formContentType + "; charset=UTF-8"}}},
		},
		"modify-no-params": {
			req: request{method: "POST", target: "/runtime_modify"},
		},
		"modify-no-admin-layer": {
			setup: func(f *fakes) { f.adminRT = false },
			req:   request{method: "POST", target: "/runtime_modify?a=1"},
			calls: []string{"Runtime.HasAdminLayer"},
		},
		"modify-error": {
			setup: func(f *fakes) { f.modifyErr = errTest },
			req:   request{method: "POST", target: "/runtime_modify?a=1"},
			calls: []string{"Runtime.HasAdminLayer", `Runtime.Modify a="1"`},
		},
	})
}
