package httpconn

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// h2BenchClient is a raw h2c client that keeps a batch of streams open, as
// h2load -m does, and reads frames without decoding more than it needs.
type h2BenchClient struct {
	nc     net.Conn
	fr     *http2.Framer
	block  []byte
	nextID uint32
	batch  bytes.Buffer
	wfr    *http2.Framer
	// next, when set, encodes each request's block anew (into block).
	next func(dst []byte, n uint64) []byte
	sent uint64
}

func newH2BenchClient(tb testing.TB, addr string) *h2BenchClient {
	tb.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	c := &h2BenchClient{nc: nc, nextID: 1}
	c.fr = http2.NewFramer(nil, bufio.NewReaderSize(nc, 64<<10))
	c.wfr = http2.NewFramer(&c.batch, nil)
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "bench"}, {Name: ":path", Value: "/up"}} {
		_ = enc.WriteField(f)
	}
	c.block = b.Bytes()
	c.batch.WriteString(http2.ClientPreface)
	_ = c.wfr.WriteSettings()
	// A big connection window, so the client never has to give credit.
	_ = c.wfr.WriteWindowUpdate(0, 1<<30)
	if _, err := nc.Write(c.batch.Bytes()); err != nil {
		tb.Fatal(err)
	}
	return c
}

// round sends n requests at once and reads until all n ended.
func (c *h2BenchClient) round(tb testing.TB, n int) {
	c.batch.Reset()
	for range n {
		if c.next != nil {
			c.block = c.next(c.block[:0], c.sent)
			c.sent++
		}
		_ = c.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: c.nextID, BlockFragment: c.block, EndStream: true, EndHeaders: true})
		c.nextID += 2
	}
	if _, err := c.nc.Write(c.batch.Bytes()); err != nil {
		tb.Fatal(err)
	}
	for ended := 0; ended < n; {
		f, err := c.fr.ReadFrame()
		if err != nil {
			tb.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			if f.StreamEnded() {
				ended++
			}
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				ended++
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.batch.Reset()
				_ = c.wfr.WriteSettingsAck()
				_, _ = c.nc.Write(c.batch.Bytes())
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			tb.Fatalf("unexpected %v", f)
		}
	}
}

// BenchmarkProxyH2c is an h2c client with 8 streams in flight proxied to a
// keep-alive HTTP/1.1 upstream over loopback (the peers benchmark's h2c
// row in-process); one op is one request.
func BenchmarkProxyH2c(b *testing.B) {
	st := stats.NewStore()
	up := newFakeCluster(st, "up", false, fixedUpstream(b))
	benchH2cProxy(b, st, up)
}

// BenchmarkProxyH2cChangingHeaders is BenchmarkProxyH2c with the header
// values a traced client sends: an x-request-id and a traceparent that
// change with every request, each a literal the client adds to the
// dynamic table (so entries are evicted as requests go by), the
// traceparent Huffman-coded.
func BenchmarkProxyH2cChangingHeaders(b *testing.B) {
	st := stats.NewStore()
	up := newFakeCluster(st, "up", false, fixedUpstream(b))
	b.Cleanup(up.closeIdle)
	cfg := hcm(routeConfig(clusterRoute("/up", "up")))
	cfg.CodecType = hcmv3.HttpConnectionManager_HTTP2
	p := startProxy(b, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": up}})
	c := newH2BenchClient(b, p.addr)
	var val []byte
	c.next = func(dst []byte, n uint64) []byte {
		// :method GET, :scheme http (static entries 2 and 6), then
		// :authority and :path as literals without indexing.
		dst = append(dst, 0x82, 0x86, 0x01, 5)
		dst = append(dst, "bench"...)
		dst = append(dst, 0x04, 3)
		dst = append(dst, "/up"...)
		// x-request-id: a UUID-shaped value, raw.
		val = appendBenchHex(val[:0], n, 8)
		val = append(val, "-4a1b-8c2d-"...)
		val = appendBenchHex(val, n*7919, 12)
		dst = append(dst, 0x40, 12)
		dst = append(dst, "x-request-id"...)
		dst = append(dst, byte(len(val)))
		dst = append(dst, val...)
		// traceparent, Huffman-coded.
		val = append(val[:0], "00-"...)
		val = appendBenchHex(val, n, 16)
		val = appendBenchHex(val, n*104729, 16)
		val = append(val, '-')
		val = appendBenchHex(val, n*31, 16)
		val = append(val, "-01"...)
		dst = append(dst, 0x40, 11)
		dst = append(dst, "traceparent"...)
		dst = append(dst, 0x80|byte(hpack.HuffmanEncodeLength(view(val))))
		return hpack.AppendHuffmanString(dst, view(val))
	}
	const inFlight = 8
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += inFlight {
		c.round(b, min(inFlight, b.N-i))
	}
}

// appendBenchHex appends v's low 4n bits as n hex digits.
func appendBenchHex(dst []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, "0123456789abcdef"[v>>(4*uint(i))&15])
	}
	return dst
}

// BenchmarkProxyH2cToHTTP2Upstream is BenchmarkProxyH2c with an h2c
// upstream (Go's HTTP/2 server, in the process) reached through the
// cluster's HTTP/2 transport, and no access log: the path whose
// per-request connection trace is built only when something reads it.
func BenchmarkProxyH2cToHTTP2Upstream(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, benchBody)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	b.Cleanup(srv.Close)
	st := stats.NewStore()
	up := newFakeCluster(st, "up", true, hostOf(srv))
	benchH2cProxy(b, st, up)
}

// benchH2cProxy runs an h2c client with 8 streams in flight against a
// proxy whose /up route goes to up; one op is one request.
func benchH2cProxy(b *testing.B, st *stats.Store, up *fakeCluster) {
	b.Cleanup(up.closeIdle)
	cfg := hcm(routeConfig(clusterRoute("/up", "up")))
	cfg.CodecType = hcmv3.HttpConnectionManager_HTTP2
	p := startProxy(b, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": up}})
	c := newH2BenchClient(b, p.addr)
	const inFlight = 8
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += inFlight {
		c.round(b, min(inFlight, b.N-i))
	}
}
