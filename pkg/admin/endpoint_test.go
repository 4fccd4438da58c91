package admin

import (
	"slices"
	"testing"
)

// endpointCase is one request to an endpoint, checked against a golden file
// (status, content type, body) and the exact calls the fakes received.
type endpointCase struct {
	setup func(*fakes)
	req   request
	calls []string
}

// runEndpointCases runs cases on fresh admins; the golden file of case
// "x" of family "f" is testdata/f-x.golden.
func runEndpointCases(t *testing.T, family string, cases map[string]endpointCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ta := newTestAdmin(t)
			if tc.setup != nil {
				tc.setup(ta.f)
			}
			rec := serve(t, ta.Handler(), tc.req)
			checkResponseGolden(t, family+"-"+name, rec)
			if got := ta.f.rec.take(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls on the fakes = %q, want %q", got, tc.calls)
			}
		})
	}
}
