package httpconn

import (
	"net/http"
	"strconv"
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

// holdFactory builds a test filter that holds the response head until it
// has the whole body (httpfilter.HeadHolder), then sets the status to 299
// and x-held-len to the body's length, and sends the body upper-cased.
type holdFactory struct{}

func (holdFactory) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return holdConfig{}, nil
}

type holdConfig struct{}

func (holdConfig) NewFilter() httpfilter.Filter { return &holdFilter{} }

type holdFilter struct {
	s   httpfilter.Stream
	buf []byte
}

func (f *holdFilter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.s = s
	s.TransformResponseBody(f)
	return httpfilter.Continue
}

func (f *holdFilter) HoldsHead() bool { return true }

func (f *holdFilter) EncodeData(p []byte) ([]byte, error) {
	f.buf = append(f.buf, p...)
	return nil, nil
}

func (f *holdFilter) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	f.s.(httpfilter.ResponseStatusSetter).SetResponseStatus(299)
	f.s.ResponseHeaders().Set("x-held-len", strconv.Itoa(len(f.buf)))
	return []byte(strings.ToUpper(string(f.buf))), trailers, nil
}

// TestHeldResponseHead checks that an encoder holding the response head
// can still change the status and headers once it has seen the body, and
// that the head then announces the body's length, over both upstream and
// client protocols.
func TestHeldResponseHead(t *testing.T) {
	reg, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of("proxy.filters.http.hold", httpFiltersCategory, &wrapperspb.BoolValue{}, holdFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	ups := fakeUpstreams{
		"h1": newFakeCluster(st, "h1", false, hostOf(echoUpstream(t))),
		"h2": newFakeCluster(st, "h2", true, hostOf(h2cUpstream(t))),
	}
	cfg := hcm(routeConfig(clusterRoute("/h2", "h2"), clusterRoute("/", "h1")), filter("hold", wrapperspb.Bool(true)))
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Extensions: reg})
	for _, path := range []string{"/h1", "/h2"} {
		for cname, c := range map[string]func() *http.Client{"HTTP/1.1": client, "HTTP/2": h2cClient} {
			t.Run(path+" upstream, "+cname+" client", func(t *testing.T) {
				status, h, body := do(t, c(), "POST", p.url(path), strings.NewReader("held body"), nil)
				if status != 299 {
					t.Fatalf("status %d: %s", status, body)
				}
				if body != strings.ToUpper(body) || !strings.HasSuffix(body, "HELD BODY") {
					t.Errorf("body %q, want the upstream's upper-cased", body)
				}
				if got := h.Get("x-held-len"); got != strconv.Itoa(len(body)) {
					t.Errorf("x-held-len %q, body of %d bytes", got, len(body))
				}
				if got := h.Get("content-length"); got != strconv.Itoa(len(body)) {
					t.Errorf("content-length %q, body of %d bytes", got, len(body))
				}
			})
		}
	}
}
