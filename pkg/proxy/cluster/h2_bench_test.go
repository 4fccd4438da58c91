package cluster

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHTTP2RoundTrip is one request and its response over the
// cluster's HTTP/2 transport, through the connection guard (flood limits,
// stream stats), to an h2c upstream in the process, with several requests
// in flight on one connection: the guard's frame scan is on this path for
// every frame both ways.
func BenchmarkHTTP2RoundTrip(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	b.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	m, _, _ := newTestManager(b, h2ClusterYAML(port))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	b.SetParallelism(4) // 8 streams in flight on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, err := http.NewRequest("GET", "http://up/", nil)
			if err != nil {
				b.Error(err)
				return
			}
			resp, err := c.RoundTripHTTP2(req, h)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}

// guardBenchConn is the far side of a guard under benchmark: writes are
// dropped, reads return next.
type guardBenchConn struct {
	net.Conn
	next []byte
}

func (c *guardBenchConn) Write(p []byte) (int, error) { return len(p), nil }

func (c *guardBenchConn) Read(p []byte) (int, error) {
	n := copy(p, c.next)
	c.next = c.next[n:]
	return n, nil
}

// appendFrame appends an HTTP/2 frame of the given type, flags and stream
// with a payload of n zero bytes.
func appendFrame(b []byte, typ, flags uint8, stream uint32, n int) []byte {
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags,
		byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
	return append(b, make([]byte, n)...)
}

// BenchmarkH2GuardFrames is the guard's own work for one request on an
// upstream HTTP/2 connection whose stream stats are followed: the proxy's
// HEADERS written, the host's HEADERS and DATA (ending the stream) read.
func BenchmarkH2GuardFrames(b *testing.B) {
	m, _, _ := newTestManager(b, h2ClusterYAML(1))
	c := m.Cluster("up")
	lim := readH2Limits(nil)
	far := &guardBenchConn{}
	g := newH2GuardConn(far, &lim, c.h2Stats())
	trackGuardStreams(g, c)
	g.out.skip = 0
	const endStream, endHeaders = 0x1, 0x4
	buf := make([]byte, 256)
	var out, in []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		stream := uint32(2*i + 1)
		out = appendFrame(out[:0], frameTypeHeaders, endHeaders|endStream, stream, 20)
		in = appendFrame(in[:0], frameTypeHeaders, endHeaders, stream, 10)
		in = appendFrame(in, frameTypeData, endStream, stream, 5)
		if _, err := g.Write(out); err != nil {
			b.Fatal(err)
		}
		far.next = in
		for len(far.next) > 0 {
			if _, err := g.Read(buf); err != nil {
				b.Fatal(err)
			}
		}
	}
}
