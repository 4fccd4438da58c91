package httpconn

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
)

// connKey is the context key under which the HTTP/2 server's per-connection
// context carries the serverConn.
type connKey struct{}

// newHTTP2Server builds the HTTP/2 server for h2c with prior knowledge.
// net/http's HTTP/2 server does the framing, flow control and HPACK; its
// handler runs each stream through the same filters and router as HTTP/1.
func (m *Manager) newHTTP2Server() *http.Server {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:     http.HandlerFunc(m.serveHTTP2Stream),
		Protocols:   protocols,
		IdleTimeout: m.cfg.idleTimeout,
		// Protocol errors of clients are theirs: the server's own log
		// line for each would only be noise.
		ErrorLog: log.New(io.Discard, "", 0),
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream: 256 << 10,
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if hc, ok := c.(*h2Conn); ok {
				return context.WithValue(ctx, connKey{}, hc.sc)
			}
			return ctx
		},
	}
}

// h2Listener hands HTTP/2 connections from HandleConn to the server.
type h2Listener struct{ m *Manager }

// Accept returns the next HTTP/2 connection, or net.ErrClosed once the
// manager closes.
func (l h2Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.h2conns:
		return c, nil
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}

// Close does nothing: the manager owns the hand-over channel.
func (l h2Listener) Close() error { return nil }

// Addr is a placeholder: connections come from several listeners.
func (l h2Listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// h2Conn is a downstream connection given to the HTTP/2 server: it replays
// the bytes read while sniffing the preface, and tells HandleConn when the
// server is done with it.
type h2Conn struct {
	net.Conn
	sc   *serverConn
	pre  []byte
	once sync.Once
	done chan struct{}
}

// Read replays the sniffed bytes, then reads the connection.
func (c *h2Conn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// Close closes the connection and releases HandleConn.
func (c *h2Conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}

// serveHTTP2 hands the connection to the HTTP/2 server and waits until the
// server closes it.
func (c *serverConn) serveHTTP2() {
	st := c.m.stats
	st.cxHTTP2Total.Inc()
	st.cxHTTP2Active.Inc()
	defer st.cxHTTP2Active.Dec()
	// The bytes already buffered belong to the connection, not to the
	// read buffer, which goes back to the pool when HandleConn returns.
	pre, _ := c.br.Peek(c.br.Buffered())
	hc := &h2Conn{Conn: c.cc, sc: c, pre: append([]byte(nil), pre...), done: make(chan struct{})}
	select {
	case c.m.h2conns <- hc:
	case <-c.m.closed:
		_ = hc.Close()
		return
	}
	<-hc.done
}

// h2Stream is what an HTTP/2 stream needs, recycled between streams so
// that a stream allocates little beyond what net/http does.
type h2Stream struct {
	s    stream
	up   upstreamScratch
	down h2Down
	body h2Body
	// keys holds the request's header names in lower case; the stream's
	// header list views them.
	keys []byte
}

// newH2Stream prepares a recyclable stream of m.
func newH2Stream(m *Manager) *h2Stream {
	b := &h2Stream{}
	b.s.m = m
	b.s.up = &b.up
	b.s.down = &b.down
	b.s.flushDown = b.down.flush
	return b
}

// serveHTTP2Stream is the HTTP/2 server's handler: one stream through the
// filters and the router.
func (m *Manager) serveHTTP2Stream(w http.ResponseWriter, r *http.Request) {
	b := m.h2streams.Get().(*h2Stream)
	s := &b.s
	defer func() {
		if !s.leaked {
			m.h2streams.Put(b)
		}
	}()
	s.connID, s.remote, s.remoteIP, s.local = 0, "", "", ""
	if sc, ok := r.Context().Value(connKey{}).(*serverConn); ok {
		s.connID, s.remote, s.remoteIP, s.local = sc.id, sc.remote, sc.remoteIP, sc.local
	}
	d := &b.down
	*d = h2Down{w: w, keys: &m.h2keys}
	d.flusher, _ = w.(http.Flusher)
	s.begin(time.Now(), protoHTTP2)
	if r.URL != nil && r.URL.Scheme != "" {
		s.scheme = r.URL.Scheme
	}
	s.setRequest(r.Method, r.RequestURI, r.Host)
	s.keepAlive = true
	b.keys = b.keys[:0]
	for k, vs := range r.Header {
		start := len(b.keys)
		for i := 0; i < len(k); i++ {
			c := k[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.keys = append(b.keys, c)
		}
		// Views stay valid when keys grows: they keep the old array.
		name := b.keys[start:]
		if hopByHopRequest(name) {
			if string(name) == "te" {
				s.teTrailers = teHasTrailers(vs)
			}
			continue
		}
		for _, v := range vs {
			s.reqHeaders.Add(view(name), v)
		}
	}
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		b.body.r, b.body.err = r.Body, nil
		s.body = &b.body
		s.reqLength = r.ContentLength
		s.reqChunked = r.ContentLength < 0
	} else {
		s.bodyDone = true
		if r.ContentLength == 0 && r.Header.Get("Content-Length") != "" {
			s.reqLength = 0
		}
	}
	s.prepareRequest()
	s.decode()
	s.end()
	if d.aborted {
		// Resets the stream, so the client sees the response break off.
		panic(http.ErrAbortHandler)
	}
}

// h2Down answers an HTTP/2 stream through net/http's ResponseWriter.
type h2Down struct {
	w       http.ResponseWriter
	flusher http.Flusher
	keys    *canonicalKeys
	aborted bool
}

func (d *h2Down) writeHead(s *stream, n int64, hasBody bool) error {
	h := d.w.Header()
	// The server encodes the head after the handler returns, when this
	// stream's buffers serve another stream: the values get a copy of
	// their own, one allocation for all of them.
	size := 0
	for _, f := range s.respHeaders.fields {
		size += len(f.value)
	}
	values := make([]byte, 0, size)
	for _, f := range s.respHeaders.fields {
		// Canonical keys, so that the server finds Content-Type and
		// does not sniff one of its own.
		k := d.keys.get(f.name)
		start := len(values)
		values = append(values, f.value...)
		h[k] = append(h[k], view(values[start:]))
	}
	if n >= 0 {
		h.Set("Content-Length", strconv.FormatInt(n, 10))
	}
	if s.closeConn {
		// net/http's HTTP/2 server turns this into a GOAWAY.
		h.Set("Connection", "close")
	}
	d.w.WriteHeader(s.status)
	return nil
}

func (d *h2Down) writeBody(p []byte) error {
	if d.aborted {
		return errAborted
	}
	_, err := d.w.Write(p)
	return err
}

func (d *h2Down) writeBodyString(p string) error {
	if d.aborted {
		return errAborted
	}
	_, err := io.WriteString(d.w, p)
	return err
}

func (d *h2Down) finish() error {
	if d.aborted {
		return errAborted
	}
	return nil
}

func (d *h2Down) abort() { d.aborted = true }

func (d *h2Down) flush() error {
	if d.aborted {
		return errAborted
	}
	if d.flusher != nil {
		d.flusher.Flush()
	}
	return nil
}

// continue100 is done by the server itself when the body is first read.
func (d *h2Down) continue100() error { return nil }

func (d *h2Down) touch(time.Time) {}

// trailers sends t after the body, as net/http's HTTP/2 server sends
// header fields set with the trailer prefix once the handler is done.
func (d *h2Down) trailers(t http.Header) {
	h := d.w.Header()
	for k, vs := range t {
		h[http.TrailerPrefix+k] = vs
	}
}

// h2BodyBuffer is the read size of an HTTP/2 request body.
const h2BodyBuffer = 32 << 10

// h2Body reads an HTTP/2 request body as a bodySource.
type h2Body struct {
	r   io.Reader
	buf []byte
	err error
}

// teHasTrailers reports whether TE values list "trailers".
func teHasTrailers(vs []string) bool {
	for _, v := range vs {
		if http1.HasToken([]byte(v), "trailers") {
			return true
		}
	}
	return false
}

// canonicalKeysMax bounds the cache: clients choose header names, and
// must not make it grow without end.
const canonicalKeysMax = 1024

// canonicalKeys caches the canonical forms of lower-case header names, so
// that a response head does not allocate one string per field.
type canonicalKeys struct {
	m sync.Map // string -> string
	n atomic.Int32
}

// get returns the canonical form of name.
func (c *canonicalKeys) get(name string) string {
	if v, ok := c.m.Load(name); ok {
		return v.(string)
	}
	k := http.CanonicalHeaderKey(name)
	if c.n.Load() < canonicalKeysMax {
		if _, loaded := c.m.LoadOrStore(strings.Clone(name), k); !loaded {
			c.n.Add(1)
		}
	}
	return k
}

// Next reads the next piece of the body into the stream's buffer.
func (b *h2Body) Next() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.buf == nil {
		b.buf = make([]byte, h2BodyBuffer)
	}
	n, err := b.r.Read(b.buf)
	if err != nil {
		b.err = err
	}
	if n > 0 {
		return b.buf[:n], nil
	}
	return nil, b.err
}
