package httpconn

import (
	"net/http"
	"strings"
	"testing"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// replaceFactory builds a test filter that reads the request body, then
// turns the request into a PUT whose body is "new:" and the old body.
type replaceFactory struct{}

func (replaceFactory) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return replaceConfig{}, nil
}

type replaceConfig struct{}

func (replaceConfig) NewFilter() httpfilter.Filter { return replaceFilter{} }

type replaceFilter struct{}

func (replaceFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	var body []byte
	if _, has := s.RequestBody(); has {
		b, complete, ok := s.BufferRequestBody(1<<10, false)
		if !ok || !complete {
			return httpfilter.Stop
		}
		body = b
	}
	rr := s.(httpfilter.RequestReplacer)
	rr.SetMethod("PUT")
	rr.ReplaceRequestBody(append([]byte("new:"), body...))
	return httpfilter.Continue
}

// TestReplaceRequest checks that a filter can turn a request into
// another: its method, and a body of known length in place of the one it
// had, or had not, over HTTP/1.1 and HTTP/2 on both sides.
func TestReplaceRequest(t *testing.T) {
	reg, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of("proxy.filters.http.replace", httpFiltersCategory, &wrapperspb.BoolValue{}, replaceFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	ups := fakeUpstreams{
		"h1": newFakeCluster(st, "h1", false, hostOf(echoUpstream(t))),
		"h2": newFakeCluster(st, "h2", true, hostOf(h2cUpstream(t))),
	}
	cfg := hcm(routeConfig(clusterRoute("/h2", "h2"), clusterRoute("/", "h1")), filter("replace", wrapperspb.Bool(true)))
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Extensions: reg})
	for cname, c := range map[string]func() *http.Client{"HTTP/1.1": client, "HTTP/2": h2cClient} {
		for _, path := range []string{"/", "/h2"} {
			for _, method := range []string{"GET", "POST"} {
				var body *strings.Reader
				want := "new:"
				if method == "POST" {
					body, want = strings.NewReader("old"), "new:old"
				}
				var status int
				var got string
				if body != nil {
					status, _, got = do(t, c(), method, p.url(path), body, nil)
				} else {
					status, _, got = do(t, c(), method, p.url(path), nil, nil)
				}
				if status != 200 || !strings.HasPrefix(got, "PUT "+path) || !strings.HasSuffix(got, "\n\n"+want) {
					t.Errorf("%s %s %s: %d\n%s", cname, method, path, status, got)
				}
			}
		}
	}
}
