package credentialinjector

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fixed is an injector with a fixed credential.
type fixed string

func (fixed) Header() string       { return "x-cred" }
func (f fixed) Credential() string { return string(f) }

func TestDecodeHeaders(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		cred                    string
		overwrite, allowMissing bool
		headers                 []string
		wantStatus              httpfilter.Status
		wantHeader              string
		wantStat                string
	}{
		{name: "injected", cred: "c", wantHeader: "c", wantStat: "injected"},
		{name: "kept", cred: "c", headers: []string{"x-cred", "own"}, wantHeader: "own", wantStat: "already_exists"},
		{name: "kept even empty", cred: "c", headers: []string{"x-cred", ""}, wantHeader: "", wantStat: "already_exists"},
		{name: "overwritten", cred: "c", overwrite: true, headers: []string{"x-cred", "own"}, wantHeader: "c", wantStat: "injected"},
		{name: "missing answers 401", wantStatus: httpfilter.Stop, wantStat: "failed"},
		{name: "missing allowed", allowMissing: true, wantStat: "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			sc := st.Scope("http.t.credential_injector.")
			c := &filterConfig{injector: fixed(tc.cred), overwrite: tc.overwrite, allowMissing: tc.allowMissing,
				injected: sc.Counter("injected"), failed: sc.Counter("failed"), alreadyExists: sc.Counter("already_exists")}
			s := httpfiltertest.NewStream("GET", "/", tc.headers...)
			if got := c.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); got != tc.wantStatus {
				t.Fatalf("status %v, want %v", got, tc.wantStatus)
			}
			if tc.wantStatus == httpfilter.Stop {
				if s.Reply == nil || s.Reply.Status != 401 || s.Reply.Body != "Failed to inject credential." || s.Reply.Details != "failed_to_inject_credential" {
					t.Errorf("reply %+v", s.Reply)
				}
			} else if v, _ := s.RequestHeaders().Get("x-cred"); v != tc.wantHeader {
				t.Errorf("x-cred %q, want %q", v, tc.wantHeader)
			}
			if v := st.Counter("http.t.credential_injector." + tc.wantStat).Value(); v != 1 {
				t.Errorf("%s = %d", tc.wantStat, v)
			}
		})
	}
}
