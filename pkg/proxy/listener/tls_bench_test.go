package listener

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// hcmLike is a filter chain that does with a connection what the HTTP
// connection manager does with one whose client goes away after the
// handshake: it captures the connection's TLS information, reads until
// the read fails, closes, and reports that it is done.
type hcmLike struct{ done chan<- struct{} }

func (h hcmLike) HandleConn(c net.Conn) {
	_ = tlsconfig.AccessLogInfo(c)
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	_ = c.Close()
	h.done <- struct{}{}
}

// BenchmarkTLSHandshake runs new full TLS 1.3 handshakes (X25519, ECDSA
// P-256) through a listener whose filter chain terminates TLS, as
// `make bench-tls` drives them with openssl s_time -new: the client
// closes as soon as its handshake is done, without reading the session
// ticket that follows it, so its socket resets the connection. It covers
// the listener's share of a handshake (accept, chain, handshake, stats,
// close) on top of tlsconfig's BenchmarkHandshake; the client's share is
// in it too.
func BenchmarkTLSHandshake(b *testing.B) {
	for _, bc := range []struct{ name, chain string }{
		{"no connect timeout", ""},
		{"transport_socket_connect_timeout", "transport_socket_connect_timeout: 10s, "},
	} {
		b.Run(bc.name, func(b *testing.B) { benchTLSListener(b, bc.chain) })
	}
}

func benchTLSListener(b *testing.B, chainExtra string) {
	done := make(chan struct{}, 1)
	addr := serveTLS(b, chainExtra, hcmLike{done: done})
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS13,
		CurvePreferences:   []tls.CurveID{tls.X25519, tls.CurveP256},
		InsecureSkipVerify: true, //nolint:gosec // the benchmark measures the server
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			b.Fatal(err)
		}
		// Unread data left behind makes the close a reset; a zero linger
		// makes it one whatever Go's client read ahead.
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
		select {
		case <-done:
		case <-time.After(ioTimeout):
			b.Fatal("the server side did not finish")
		}
	}
}

// serveTLS serves a listener on a loopback port whose one filter chain
// terminates TLS (a fresh ECDSA P-256 certificate for localhost, ALPN h2
// and http/1.1, chainExtra being more of the chain's fields) and hands
// connections to h; it returns the listener's address.
func serveTLS(tb testing.TB, chainExtra string, h ConnHandler) string {
	tb.Helper()
	ca, err := tlstest.NewCA("test CA")
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := ca.Issue(tlstest.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, leaf.CertPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, leaf.KeyPEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	deps := testDeps(stats.NewStore(), 1)
	deps.BuildChain = func(*listenerv3.FilterChain, *Drain) (ConnHandler, error) { return h, nil }
	deps.BuildTransportSocket = func(*corev3.TransportSocket) (Transport, error) {
		s, err := tlsconfig.CompileServer(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols: []string{"h2", "http/1.1"},
			TlsCertificates: []*tlsv3.TlsCertificate{{
				CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: certFile}},
				PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: keyFile}},
			}},
		}})
		return Transport{TLS: s}, err
	}
	l, err := Build(parseListener(tb, "name: tls\naddress: {socket_address: {address: 127.0.0.1, port_value: 0}}\n"+
		"filter_chains: [{"+chainExtra+"transport_socket: {name: envoy.transport_sockets.tls}}]"), deps)
	if err != nil {
		tb.Fatal(err)
	}
	return serve(tb, l)
}
