package httpconn

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// meterStep is how many bytes the test throttle lets out per Take.
const meterStep = 64

// meterFactory builds a test filter that meters the response body out,
// meterStep bytes at a time with its configuration's milliseconds between
// them, counting in takes the slices it granted.
type meterFactory struct{ takes *atomic.Int64 }

func (f meterFactory) Compile(m proto.Message, _ httpfilter.Context) (httpfilter.Config, error) {
	ms := m.(*wrapperspb.Int32Value).GetValue()
	return meterConfig{takes: f.takes, wait: time.Duration(ms) * time.Millisecond}, nil
}

type meterConfig struct {
	takes *atomic.Int64
	wait  time.Duration
}

func (c meterConfig) NewFilter() httpfilter.Filter { return &meterFilter{takes: c.takes, wait: c.wait} }

type meterFilter struct {
	takes *atomic.Int64
	wait  time.Duration
}

func (f *meterFilter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	s.TransformResponseBody(f)
	return httpfilter.Continue
}

func (f *meterFilter) Take(n int, _ time.Time) (int, time.Duration) {
	f.takes.Add(1)
	if n <= meterStep {
		return n, 0
	}
	return meterStep, f.wait
}

func (f *meterFilter) EncodeData(p []byte) ([]byte, error) { return p, nil }

func (f *meterFilter) EncodeEnd(t http.Header) ([]byte, http.Header, error) { return nil, t, nil }

func (f *meterFilter) KeepsLength() bool { return true }

// TestThrottledResponse checks a metered response body over both
// upstream and client protocols: whole and in order, in slices, keeping
// its length; and behind or before an encoder that holds the whole body
// (the metered bytes then come from its end, or go into it).
func TestThrottledResponse(t *testing.T) {
	var takes atomic.Int64
	reg := routerAnd(t,
		extension.Of("proxy.filters.http.hold", httpFiltersCategory, &wrapperspb.BoolValue{}, holdFactory{}),
		extension.Of("proxy.filters.http.meter", httpFiltersCategory, &wrapperspb.Int32Value{}, meterFactory{&takes}))
	st := stats.NewStore()
	ups := fakeUpstreams{
		"h1": newFakeCluster(st, "h1", false, hostOf(echoUpstream(t))),
		"h2": newFakeCluster(st, "h2", true, hostOf(h2cUpstream(t))),
	}
	meter, hold := filter("meter", wrapperspb.Int32(1)), filter("hold", wrapperspb.Bool(true))
	// Short enough for the HTTP/1 upstream to announce its length.
	reqBody := strings.Repeat("metered body ", 120)
	for cfgName, filters := range map[string][]*hcmv3.HttpFilter{
		"metered":               {meter},
		"metered after holding": {meter, hold},
		"held after metering":   {hold, meter},
	} {
		cfg := hcm(routeConfig(clusterRoute("/h2", "h2"), clusterRoute("/", "h1")), filters...)
		p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Extensions: reg})
		for _, path := range []string{"/h1", "/h2"} {
			for cname, c := range map[string]func() *http.Client{"HTTP/1.1": client, "HTTP/2": h2cClient} {
				t.Run(cfgName+", "+path+" upstream, "+cname+" client", func(t *testing.T) {
					before := takes.Load()
					status, h, body := do(t, c(), "POST", p.url(path), strings.NewReader(reqBody), nil)
					held := cfgName != "metered"
					want := 200
					if held {
						want = 299
						reqBody := strings.ToUpper(reqBody)
						if !strings.HasSuffix(body, reqBody) {
							t.Errorf("body %q, want the upstream's, upper-cased", body)
						}
					} else if !strings.HasSuffix(body, reqBody) {
						t.Errorf("body %q, want the upstream's", body)
					}
					if status != want {
						t.Fatalf("status %d, want %d", status, want)
					}
					if n := takes.Load() - before; n < int64(len(body)/meterStep) {
						t.Errorf("%d slices for %d bytes: the body was not metered", n, len(body))
					}
					if got := h.Get("content-length"); !held && got != strconv.Itoa(len(body)) {
						t.Errorf("content-length %q, body of %d bytes: the throttle keeps the length", got, len(body))
					}
				})
			}
		}
	}
}

// TestThrottledClientGone checks that a client going away while its
// response is metered out ends the stream at once, not when the metering
// would have ended.
func TestThrottledClientGone(t *testing.T) {
	var takes atomic.Int64
	reg := routerAnd(t, extension.Of("proxy.filters.http.meter", httpFiltersCategory, &wrapperspb.Int32Value{}, meterFactory{&takes}))
	st := stats.NewStore()
	// The throttle lets 64 bytes out an hour: only the client going away
	// ends the stream before then.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	ups := fakeUpstreams{"h1": newFakeCluster(st, "h1", false, hostOf(big))}
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "h1")), filter("meter", wrapperspb.Int32(3600_000))), Deps{Stats: st, Upstreams: ups, Extensions: reg})
	resp, err := client().Get(p.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if n, err := resp.Body.Read(buf); err != nil || n > meterStep {
		t.Fatalf("read %d bytes (%v), want the first slice", n, err)
	}
	if p.gauge("http.test.downstream_rq_active") != 1 {
		t.Fatalf("downstream_rq_active %d while the body is metered", p.gauge("http.test.downstream_rq_active"))
	}
	// Closed before its end, the body closes the connection.
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for p.gauge("http.test.downstream_rq_active") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream still runs 10 s after its client went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// routerAnd is an extension registry of the router and the test's
// filters.
func routerAnd(t *testing.T, filters ...extension.Extension) *extension.Registry {
	t.Helper()
	reg, err := extension.New(append([]extension.Extension{extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{})}, filters...)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
