package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// proxyHeaderConn is an accepted connection whose PROXY protocol header
// was read: line says what it held (see readProxyHeader), and reads go
// on from after it.
type proxyHeaderConn struct {
	net.Conn
	r    *bufio.Reader
	line string
	rqs  atomic.Int32
}

func (c *proxyHeaderConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// proxyHeaderListener reads the PROXY protocol header of each connection
// it accepts; a connection without one is closed.
type proxyHeaderListener struct{ net.Listener }

func (l proxyHeaderListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		r := bufio.NewReader(c)
		if line, ok := readProxyHeader(r); ok {
			return &proxyHeaderConn{Conn: c, r: r, line: line}, nil
		}
		_ = c.Close()
	}
}

// proxyHeaderConnKey is the context key of a request's proxyHeaderConn.
type proxyHeaderConnKey struct{}

// startProxyHeaderHTTPServer starts an HTTP/1.1 and h2c server on
// loopback whose connections start with a PROXY protocol header: each
// request is answered with what its connection's header said, the
// connection's request count, and its peer's address
// ("<header> #<n> peer=<addr>").
func startProxyHeaderHTTPServer() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	protocols := &http.Protocols{}
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols: protocols,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, proxyHeaderConnKey{}, c)
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, _ := r.Context().Value(proxyHeaderConnKey{}).(*proxyHeaderConn)
			if c == nil {
				http.Error(w, "no PROXY header", http.StatusInternalServerError)
				return
			}
			_, _ = fmt.Fprintf(w, "%s #%d peer=%s", c.line, c.rqs.Add(1), c.RemoteAddr())
		}),
	}
	go func() { _ = srv.Serve(proxyHeaderListener{ln}) }()
	DeferCleanup(srv.Close)
	return ln.Addr().(*net.TCPAddr).Port
}
