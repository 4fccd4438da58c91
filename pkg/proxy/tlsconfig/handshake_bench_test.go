package tlsconfig

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
)

// The handshake benchmarks measure the server side of new full TLS 1.3
// handshakes (X25519, ECDSA P-256, ALPN offered, no resumption) over
// loopback TCP, as `make bench-tls` drives them with openssl s_time -new:
// BenchmarkHandshake through a compiled DownstreamTlsContext, its ssl.*
// stats and the connection's TLS information as the HTTP connection
// manager captures it, and BenchmarkHandshakeFloor through a bare
// crypto/tls server with the same certificate, the cost nothing of ours
// can go below. Their difference is Outrigger's own work per handshake.

// benchClientConfig is a client offering what openssl s_time offers for
// a new TLS 1.3 handshake: X25519 and P-256, h2 and http/1.1, and no
// session to resume. It does not verify the chain (the server's cost is
// what is measured).
func benchClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		CurvePreferences:   []tls.CurveID{tls.X25519, tls.CurveP256},
		NextProtos:         []string{"h2", "http/1.1"},
		ServerName:         "localhost",
		InsecureSkipVerify: true, //nolint:gosec // the benchmark measures the server
	}
}

// benchHandshakes runs b.N handshakes between benchClientConfig and
// serve, each on a new loopback connection; serve runs the server side
// and closes its connection.
func benchHandshakes(b *testing.B, serve func(net.Conn) error) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	errs := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(errs)
				return
			}
			errs <- serve(c)
		}
	}()
	cfg := benchClientConfig()
	buf := make([]byte, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			b.Fatal(err)
		}
		// The server closes once done: reading its close (past the
		// session tickets) waits for the whole server side.
		for {
			if _, err := tc.Read(buf); err != nil {
				break
			}
		}
		_ = c.Close()
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = ln.Close()
	<-errs
}

// benchContext is the DownstreamTlsContext of `make bench-tls`: one
// certificate, ALPN h2 and http/1.1, Envoy's defaults otherwise.
func benchContext(b *testing.B) *Server {
	b.Helper()
	p := newPKI(b)
	dc := p.context()
	dc.CommonTlsContext.AlpnProtocols = []string{"h2", "http/1.1"}
	s, err := CompileServer(dc)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func BenchmarkHandshake(b *testing.B) {
	s := benchContext(b)
	_, st := newStats()
	benchHandshakes(b, func(c net.Conn) error {
		defer c.Close()
		tc, local, err := s.Handshake(context.Background(), c, st)
		if err != nil {
			return err
		}
		// What every connection's HTTP connection manager keeps of it.
		_ = ConnInfo(tc.ConnectionState(), local)
		return tc.Close()
	})
}

func BenchmarkHandshakeFloor(b *testing.B) {
	s := benchContext(b)
	cfg := &tls.Config{
		Certificates:     []tls.Certificate{s.served[0]},
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
		NextProtos:       []string{"h2", "http/1.1"},
	}
	benchHandshakes(b, func(c net.Conn) error {
		defer c.Close()
		tc := tls.Server(c, cfg)
		if err := tc.Handshake(); err != nil {
			return err
		}
		return tc.Close()
	})
}
