package apikeyauth

import (
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// FuzzRemoveKey feeds hide_credentials the request's path and cookie
// header, outside input: it must not fail, and what it leaves must no
// longer carry the key.
func FuzzRemoveKey(f *testing.F) {
	f.Add("/p?a=1&api%5Fkey=k&b=2#frag", "a=1; key=v; b=2")
	f.Add("/?api_key", "key")
	f.Add("/?&&api_key=&=x", ";;key=;=")
	sources := []keySource{{kind: fromQuery, name: "api_key"}, {kind: fromCookie, name: "key"}}
	f.Fuzz(func(t *testing.T, path, cookie string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(cookie, "\r\n") {
			return
		}
		s := httpfiltertest.NewStream("GET", path, "cookie", cookie)
		removeKey(s, sources)
		if _, ok := router.QueryParam(s.Req.Path, "api_key"); ok {
			t.Fatalf("%q: the query key is still in %q", path, s.Req.Path)
		}
		if _, ok := router.CookieValue(s.RequestHeaders(), "key"); ok {
			v, _ := s.RequestHeaders().Get("cookie")
			t.Fatalf("%q: the cookie is still in %q", cookie, v)
		}
	})
}
