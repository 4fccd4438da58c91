package oauth2

import (
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// FuzzCookiesAndCallback sends arbitrary cookies and paths (callbacks
// included) through the filter: whatever they hold, the request is
// answered, never let through (no session can be made without the HMAC
// secret) and never a crash.
func FuzzCookiesAndCallback(f *testing.F) {
	h := newHarness(f, nil)
	cfg := baseConfig()
	cfg.UseRefreshToken = wrapperspb.Bool(false) // no token request
	fc := h.compile(cfg)
	state := encodeState(flowState{URL: "http://host/", CSRFToken: "a.b", FlowID: "a"})
	for _, seed := range [][2]string{
		{"/app", sessionCookies("host", 1, "at", "id", "rt")},
		{"/callback?code=1&state=" + state, "OauthNonce.a=a.b; CodeVerifier=x"},
		{"/callback?error=denied&state=" + state, `OauthNonce="a.b"`},
		{"/callback?code=&state=%%%", ";;=;a=\"\x00"},
		{"/signout", "OauthNonce.=1; CodeVerifier.zz=2"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, path, cookies string) {
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		s := httpfiltertest.NewStream("GET", path, "cookie", cookies)
		if st := run(fc, s); st == httpfilter.Continue || s.Reply == nil {
			t.Fatalf("path %q cookies %q went on (%v)", path, cookies, st)
		}
	})
}
