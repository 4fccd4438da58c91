package httpconn

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestHashPolicyPicks checks that the route's hash_policy reaches a
// cluster that routes on it: a key keeps its host, and a cookie entry with
// a ttl makes a missing cookie and sets it on the upstream's response.
func TestHashPolicyPicks(t *testing.T) {
	upA, upB := echoUpstream(t), echoUpstream(t)
	st := stats.NewStore()
	cl := newFakeCluster(st, "echo", false, hostOf(upA), hostOf(upB))
	cl.hashed = true
	rr := newFakeCluster(st, "rr", false, hostOf(upA))
	hashed := func(a *routev3.RouteAction) {
		a.HashPolicy = []*routev3.RouteAction_HashPolicy{
			{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-user"}}, Terminal: true},
			{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "sticky", Ttl: durationpb.New(time.Hour), Path: "/"}}},
		}
	}
	p := startProxy(t, hcm(routeConfig(clusterRoute("/rr", "rr", hashed), clusterRoute("/", "echo", hashed))),
		Deps{Stats: st, Upstreams: fakeUpstreams{"echo": cl, "rr": rr}})
	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", p.url(path), nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Add(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, user := range []string{"alice", "bob", "carol"} {
		first := get("/", "x-user", user).Header.Get("x-upstream")
		for range 3 {
			if got := get("/", "x-user", user).Header.Get("x-upstream"); got != first {
				t.Fatalf("%s went to %s, then %s", user, first, got)
			}
		}
	}
	// Without the header, the cookie decides; the proxy makes it.
	resp := get("/")
	cookie := resp.Header.Get("set-cookie")
	if !regexp.MustCompile(`^sticky="[0-9a-f]{16}"; Max-Age=3600; Path=/; HttpOnly$`).MatchString(cookie) {
		t.Fatalf("Set-Cookie %q", cookie)
	}
	value := cookie[len(`sticky="`) : len(`sticky="`)+16]
	first := get("/", "cookie", "sticky="+value)
	if first.Header.Get("set-cookie") != "" {
		t.Errorf("a request with the cookie got a new one")
	}
	if got := get("/", "cookie", "other=1; sticky="+value).Header.Get("x-upstream"); got != first.Header.Get("x-upstream") {
		t.Errorf("the cookie went to %s, then %s", first.Header.Get("x-upstream"), got)
	}
	// A cluster that does not route on the hash never computes it, so
	// never makes a cookie.
	if got := get("/rr").Header.Get("set-cookie"); got != "" {
		t.Errorf("a round robin cluster's response got Set-Cookie %q", got)
	}
}
