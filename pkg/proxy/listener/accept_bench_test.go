package listener

import (
	"io"
	"net"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// closingChain is a filter chain that closes each connection at once and
// reports that it did.
type closingChain struct{ done chan<- struct{} }

func (h closingChain) HandleConn(c net.Conn) {
	_ = c.Close()
	h.done <- struct{}{}
}

// benchAcceptClose runs connections through the accept and close path of
// a listener built from text: the client connects and waits for the
// chain's close.
func benchAcceptClose(b *testing.B, text string, deps Deps) {
	done := make(chan struct{}, 1)
	deps.BuildChain = func(*listenerv3.FilterChain, *Drain) (ConnHandler, error) { return closingChain{done: done}, nil }
	l, err := Build(parseListener(b, text), deps)
	if err != nil {
		b.Fatal(err)
	}
	addr := serve(b, l)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
		<-done
	}
}

// BenchmarkAcceptClose is the listener's accept and close path per
// connection (client dial and close included, as a fixed cost), without
// a listener access_log: what every listener pays.
func BenchmarkAcceptClose(b *testing.B) {
	benchAcceptClose(b, `
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: c}]
`, testDeps(stats.NewStore(), 1))
}
