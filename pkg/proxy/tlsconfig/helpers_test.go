package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// testPKI is a CA with a server and a client certificate, written to
// files of a test's directory.
type testPKI struct {
	ca               *tlstest.CA
	server, client   *tlstest.Leaf
	dir              string
	caFile, certFile string
	keyFile          string
}

func newPKI(t testing.TB) *testPKI {
	t.Helper()
	ca, err := tlstest.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(tlstest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(tlstest.Options{CommonName: "client", URIs: []string{"spiffe://cluster.local/ns/a/sa/client"}, DNS: []string{"client.example.com"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{ca: ca, server: srv, client: cli, dir: t.TempDir()}
	p.caFile = p.write(t, "ca.pem", ca.PEM)
	p.certFile = p.write(t, "cert.pem", srv.CertPEM)
	p.keyFile = p.write(t, "key.pem", srv.KeyPEM)
	return p
}

func (p *testPKI) write(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func file(name string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: name}}
}

// context is a DownstreamTlsContext serving the PKI's server certificate.
func (p *testPKI) context() *tlsv3.DownstreamTlsContext {
	return &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificates: []*tlsv3.TlsCertificate{{CertificateChain: file(p.certFile), PrivateKey: file(p.keyFile)}},
	}}
}

// clientConfig trusts the PKI's CA, presenting the client certificate
// when withCert.
func (p *testPKI) clientConfig(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if withCert {
		c, err := tls.X509KeyPair(p.client.CertPEM, p.client.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// clientWith trusts the PKI's CA and presents leaf, whatever CAs the
// server names (as curl does).
func (p *testPKI) clientWith(t *testing.T, leaf *tlstest.Leaf) *tls.Config {
	t.Helper()
	cfg := p.clientConfig(t, false)
	c, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	return cfg
}

// loopbackPair is a connected pair of loopback TCP sockets (a pipe would
// deadlock TLS, whose sides both write at once).
func loopbackPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// handshake runs a handshake between a client with cfg and s over
// loopback, and returns both sides' outcome.
func handshake(t *testing.T, s *Server, st *Stats, cfg *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	a, b := loopbackPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		cs  tls.ConnectionState
		err error
	}
	done := make(chan result, 1)
	go func() {
		tc, _, err := s.Handshake(ctx, a, st)
		if err != nil {
			_ = a.Close()
			done <- result{err: err}
			return
		}
		done <- result{cs: tc.ConnectionState()}
		// TLS 1.3 clients learn of a refused certificate on their
		// first read: give them one.
		_, _ = tc.Write([]byte("x"))
	}()
	cc := tls.Client(b, cfg)
	cerr := cc.HandshakeContext(ctx)
	if cerr == nil {
		_, cerr = cc.Read(make([]byte, 1))
	}
	_ = b.Close()
	r := <-done
	return r.cs, r.err, cerr
}

func newStats() (*stats.Store, *Stats) {
	st := stats.NewStore()
	return st, NewStats(st.Scope("listener.test.ssl."))
}

// resumedOn runs a handshake with s of a client keeping its sessions in
// cache, and reports whether it resumed one.
func (p *testPKI) resumedOn(t *testing.T, s *Server, cache tls.ClientSessionCache) bool {
	t.Helper()
	cfg := p.clientConfig(t, false)
	cfg.ClientSessionCache = cache
	cs, serr, cerr := handshake(t, s, nil, cfg)
	if serr != nil || cerr != nil {
		t.Fatalf("handshake: %v, %v", serr, cerr)
	}
	return cs.DidResume
}
