package httpconn

import (
	"io"
	"net"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// FuzzServeConn feeds arbitrary client bytes to a connection manager and
// checks that it neither panics nor hangs: whatever the bytes, the
// connection ends once the client is gone. Routes answer directly or go
// to a cluster whose host refuses connections, so no upstream is needed.
func FuzzServeConn(f *testing.F) {
	for _, seed := range []string{
		"GET /d HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /d HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /redirect HTTP/1.1\r\nHost: h\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
	} {
		f.Add([]byte(seed))
	}
	st := stats.NewStore()
	cfg := hcm(routeConfig(
		directRoute("/d", 200, "hi"),
		&routev3.Route{
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/redirect"}},
			Action: &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{
				SchemeRewriteSpecifier: &routev3.RedirectAction_HttpsRedirect{HttpsRedirect: true},
			}},
		},
		clusterRoute("/up", "refused"),
	), filter("health_check", &healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(false),
		Headers: []*routev3.HeaderMatcher{{Name: ":path", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
			StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "/healthz"}},
		}}}}))
	m, err := New(cfg, Deps{
		Log: logr.Discard(), Stats: st, Extensions: builtin.Registry(),
		Upstreams: fakeUpstreams{"refused": newFakeCluster(st, "refused", false, "127.0.0.1:1")},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = m.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.HandleConn(server)
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = client.Write(data)
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the connection manager still serves a connection whose client left; input %q", data)
		}
	})
}
