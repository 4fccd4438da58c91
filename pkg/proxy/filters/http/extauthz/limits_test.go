package extauthz

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// TestEnforceResponseHeaderLimits checks enforce_response_header_limits:
// the service's response headers stop at max_headers_count (:status
// counted), the omission counted; without it they are all added. A
// denial's reply first drops the headers the service names.
func TestEnforceResponseHeaderLimits(t *testing.T) {
	edits := []headerEdit{{"x-a", "1", actionAdd}, {"x-b", "2", actionSet}, {"x-have", "new", actionSet}, {"x-c", "3", actionAddIfAbsent}}
	for name, tc := range map[string]struct {
		config          string
		denied          bool
		present, absent []string
		omitted         uint64
	}{
		"allowed, enforced": {`, "enforce_response_header_limits": true`, false, []string{"x-a", "x-have"}, []string{"x-b", "x-c"}, 1},
		"denied, enforced":  {`, "enforce_response_header_limits": true`, true, []string{"x-a", "x-b"}, []string{"x-have", "x-c"}, 1},
		"allowed":           {``, false, []string{"x-a", "x-b", "x-have", "x-c"}, nil, 0},
		"denied":            {``, true, []string{"x-a", "x-b", "x-have", "x-c"}, nil, 0},
	} {
		t.Run(name, func(t *testing.T) {
			resp := &response{status: statusOK, responseHeaders: edits}
			if tc.denied {
				resp = &response{status: statusDenied, httpStatus: 401, localHeaders: edits}
			}
			c, _, ctx := newTest(t, `{`+grpcService+tc.config+`}`, resp)
			s := routed("GET", "/")
			s.StreamInfo.MaxHeadersCount = 3
			s.RespHeaders = httpfiltertest.NewHeaders("x-have", "old")
			run(c, s)
			for _, n := range tc.present {
				if _, ok := s.RespHeaders.Get(n); !ok {
					t.Errorf("%s missing", n)
				}
			}
			for _, n := range tc.absent {
				if _, ok := s.RespHeaders.Get(n); ok {
					t.Errorf("%s added past the limit", n)
				}
			}
			if v, _ := s.RespHeaders.Get("x-have"); !tc.denied && v != "new" {
				t.Errorf("x-have = %q: an existing header is set whatever the limit", v)
			}
			if got := counter(ctx, "http.in.ext_authz.omitted_response_headers"); got != tc.omitted {
				t.Errorf("omitted_response_headers %d, want %d", got, tc.omitted)
			}
		})
	}
}
