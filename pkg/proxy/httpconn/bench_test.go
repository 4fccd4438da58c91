package httpconn

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// benchBody is the 128-byte body of the benchmark goal.
var benchBody = strings.Repeat("0123456789abcdef", 8)

// fixedUpstream answers every request with a 128-byte body, allocating
// nothing per request, so that a benchmark's allocations are the proxy's.
func fixedUpstream(tb testing.TB) string { return fixedUpstreamOf(tb, benchBody) }

// fixedUpstreamOf is fixedUpstream answering with body.
func fixedUpstreamOf(tb testing.TB, body string) string {
	tb.Helper()
	response := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	return rawUpstream(tb, func(c net.Conn, r *bufio.Reader) {
		_ = c.SetDeadline(time.Time{})
		var (
			head []byte
			req  http1.Request
			body http1.BodyReader
		)
		for {
			var err error
			if head, err = http1.ReadHead(r, head, 64<<10); err != nil {
				return
			}
			if err := http1.ParseRequest(head, &req, http1.RequestOptions{MaxHeaders: 100}); err != nil {
				return
			}
			if req.ContentLength > 0 {
				body.Reset(r, http1.BodyLength, req.ContentLength, 0, nil)
				if !drain(&body) {
					return
				}
			}
			if _, err := c.Write(response); err != nil {
				return
			}
		}
	})
}

// drain reads a body to its end.
func drain(b *http1.BodyReader) bool {
	for {
		_, err := b.Next()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// benchClient sends one request and reads its response, without
// allocating.
type benchClient struct {
	c    net.Conn
	r    *bufio.Reader
	req  []byte
	head []byte
	resp http1.Response
	body http1.BodyReader
}

func newBenchClient(tb testing.TB, addr, request string) *benchClient {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &benchClient{c: c, r: bufio.NewReaderSize(c, 8192), req: []byte(request)}
}

func (bc *benchClient) roundTrip(tb testing.TB) {
	if _, err := bc.c.Write(bc.req); err != nil {
		tb.Fatal(err)
	}
	var err error
	if bc.head, err = http1.ReadHead(bc.r, bc.head, 64<<10); err != nil {
		tb.Fatal(err)
	}
	if err := http1.ParseResponse(bc.head, &bc.resp, 100); err != nil {
		tb.Fatal(err)
	}
	if bc.resp.Status != 200 {
		tb.Fatalf("status %d", bc.resp.Status)
	}
	bc.body.Reset(bc.r, bc.resp.BodyKind(false), bc.resp.ContentLength, 1024, nil)
	if !drain(&bc.body) {
		tb.Fatal("response body broke off")
	}
}

// BenchmarkProxyHTTP1 is one keep-alive client proxied to one keep-alive
// upstream over loopback: the whole request path, with allocs/op counting
// only the proxy (client and upstream allocate nothing).
func BenchmarkProxyHTTP1(b *testing.B) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench"))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
	bc := newBenchClient(b, p.addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\nUser-Agent: bench\r\n\r\n")
	bc.roundTrip(b) // warm the buffers and the upstream pool
	b.ReportAllocs()
	for b.Loop() {
		bc.roundTrip(b)
	}
}

// BenchmarkProxyHTTP1Large is BenchmarkProxyHTTP1 with response bodies
// of 64 KiB and 1 MiB, which move between the sockets without the proxy's
// buffers (splice.go): allocs/op must stay 0 there too.
func BenchmarkProxyHTTP1Large(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			st := stats.NewStore()
			cl := newFakeCluster(st, "bench", false, fixedUpstreamOf(b, strings.Repeat("x", size)))
			p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench"))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
			bc := newBenchClient(b, p.addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\nUser-Agent: bench\r\n\r\n")
			bc.r = bufio.NewReaderSize(bc.c, 64<<10)
			bc.roundTrip(b)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				bc.roundTrip(b)
			}
		})
	}
}

// BenchmarkProxyHTTP1Post is BenchmarkProxyHTTP1 with a 128-byte request
// body.
func BenchmarkProxyHTTP1Post(b *testing.B) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench"))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
	bc := newBenchClient(b, p.addr, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 128\r\n\r\n"+benchBody)
	bc.roundTrip(b)
	b.ReportAllocs()
	for b.Loop() {
		bc.roundTrip(b)
	}
}

// BenchmarkProxyHTTP1PostLarge is BenchmarkProxyHTTP1Post with 64 KiB
// and 1 MiB request bodies, whose rest past the first read moves between
// the sockets (splice.go); it guards that path's 0 allocs/op.
func BenchmarkProxyHTTP1PostLarge(b *testing.B) {
	for _, n := range []int{64 << 10, 1 << 20} {
		b.Run(strconv.Itoa(n>>10)+"KiB", func(b *testing.B) {
			st := stats.NewStore()
			cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
			p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench"))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
			bc := newBenchClient(b, p.addr, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: "+strconv.Itoa(n)+"\r\n\r\n"+strings.Repeat("p", n))
			bc.roundTrip(b)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				bc.roundTrip(b)
			}
		})
	}
}

// BenchmarkDirectResponse is a request the proxy answers itself.
func BenchmarkDirectResponse(b *testing.B) {
	p := startProxy(b, hcm(routeConfig(directRoute("/", 200, benchBody))), Deps{})
	bc := newBenchClient(b, p.addr, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	bc.roundTrip(b)
	b.ReportAllocs()
	for b.Loop() {
		bc.roundTrip(b)
	}
}

// BenchmarkProxyHTTP1AccessLog is BenchmarkProxyHTTP1 with Envoy's default
// access-log format written for every request.
func BenchmarkProxyHTTP1AccessLog(b *testing.B) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	cfg := hcm(routeConfig(clusterRoute("/", "bench")))
	cfg.AccessLog = []*accesslogv3.AccessLog{{
		Name:       "envoy.access_loggers.file",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(&filev3.FileAccessLog{Path: "discard"})},
	}}
	p := startProxy(b, cfg, Deps{
		Stats: st, Upstreams: fakeUpstreams{"bench": cl},
		AccessLogs: accesslog.SinkContext{Open: func(accesslog.Destination, string) (io.Writer, error) { return io.Discard, nil }},
	})
	bc := newBenchClient(b, p.addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\nUser-Agent: bench\r\n\r\n")
	bc.roundTrip(b)
	b.ReportAllocs()
	for b.Loop() {
		bc.roundTrip(b)
	}
}

// BenchmarkProxyHTTP1NewConn is a new connection per request (connect,
// one request, close), proxied to one keep-alive upstream: what a new
// connection costs the proxy beyond the request, from its accept to its
// end (issue #19's new-connection row). The client closes after the
// response, as the idle benchmark's new-connection clients do.
func BenchmarkProxyHTTP1NewConn(b *testing.B) {
	st := stats.NewStore()
	cl := newFakeCluster(st, "bench", false, fixedUpstream(b))
	p := startProxy(b, hcm(routeConfig(clusterRoute("/", "bench"))), Deps{Stats: st, Upstreams: fakeUpstreams{"bench": cl}})
	const request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:10000\r\nUser-Agent: bench\r\n\r\n"
	bc := &benchClient{r: bufio.NewReaderSize(nil, 8192), req: []byte(request)}
	once := func() {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			b.Fatal(err)
		}
		bc.c = c
		bc.r.Reset(c)
		bc.roundTrip(b)
		_ = c.Close()
	}
	once() // warm the buffers and the upstream pool
	b.ReportAllocs()
	for b.Loop() {
		once()
	}
}
