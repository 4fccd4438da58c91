package lua

import (
	"errors"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	"github.com/go-logr/logr/funcr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// loopbackServices reaches each named cluster at its address.
type loopbackServices map[string]string

func (loopbackServices) OpenGRPC(*corev3.GrpcService) (*grpcservice.Channel, error) {
	return nil, errors.New("no gRPC here")
}

func (l loopbackServices) Cluster(name string) grpcservice.Cluster {
	addr, ok := l[name]
	if !ok {
		return nil
	}
	return dialer(addr)
}

type dialer = grpcservicetest.Dialer

// testFilter is a compiled filter with its stat store and the log lines
// it wrote.
type testFilter struct {
	*filterConfig
	store *stats.Store
	logs  *[]string
	// streams are the per-request filters, by stream.
	streams map[*httpfiltertest.Stream]*streamFilter
}

// of is the request filter of s, made on first use as the connection
// manager makes it when the request starts.
func (f testFilter) of(s *httpfiltertest.Stream) *streamFilter {
	sf, ok := f.streams[s]
	if !ok {
		sf = f.NewFilter().(*streamFilter)
		f.streams[s] = sf
	}
	return sf
}

// DecodeHeaders runs the request filter of s.
func (f testFilter) DecodeHeaders(s *httpfiltertest.Stream) httpfilter.Status {
	return f.of(s).DecodeHeaders(s)
}

// EncodeHeaders runs the request filter of s on its response.
func (f testFilter) EncodeHeaders(s *httpfiltertest.Stream) httpfilter.Status {
	return f.of(s).EncodeHeaders(s)
}

// compile compiles p as the filter "lua" under the stat prefix
// "http.test.", with services.
func compile(t testing.TB, p *luav3.Lua, services httpfilter.Services) testFilter {
	t.Helper()
	store := stats.NewStore()
	logs := &[]string{}
	log := funcr.New(func(prefix, args string) { *logs = append(*logs, args) }, funcr.Options{Verbosity: 2})
	if services == nil {
		services = loopbackServices{}
	}
	cfg, err := Factory{}.Compile(p, httpfilter.Context{Name: "lua", Stats: store, StatPrefix: "http.test.", Log: log, Services: services})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	fc := cfg.(*filterConfig)
	t.Cleanup(func() { _ = fc.Close() })
	return testFilter{filterConfig: fc, store: store, logs: logs, streams: map[*httpfiltertest.Stream]*streamFilter{}}
}

// inline compiles a filter of one inline script.
func inline(t testing.TB, code string) testFilter {
	t.Helper()
	return compile(t, &luav3.Lua{DefaultSourceCode: source(code)}, nil)
}

// source is an inline_string DataSource.
func source(code string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: code}}
}

// errorsCount is the filter's lua.errors counter.
func (f testFilter) errorsCount() uint64 { return f.store.Counter("http.test.lua.errors").Value() }

// request is a GET of path with headers.
func request(path string, headers ...string) *httpfiltertest.Stream {
	s := httpfiltertest.NewStream("GET", path, headers...)
	s.Req.Host = "example.com"
	s.Req.Scheme = "http"
	return s
}

// response gives s a response of status with headers.
func response(s *httpfiltertest.Stream, status int, headers ...string) *httpfiltertest.Stream {
	s.Status = status
	s.RespHeaders = httpfiltertest.NewHeaders(headers...)
	return s
}

// withBudget shortens the filter's time budget (and its scripts') for
// the loop tests.
func (f testFilter) withBudget(d time.Duration) testFilter {
	f.budget = d
	if f.def != nil {
		f.def.budget = d
	}
	return f
}
