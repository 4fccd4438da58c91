package e2e

import (
	"io"
	"net"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gproto "google.golang.org/protobuf/proto"
)

// otlpPost is one OTLP/HTTP request an endpoint took: its path, content
// type and decoded message.
type otlpPost[M gproto.Message] struct {
	path, contentType string
	req               M
}

// otlpHTTPEndpoint is an OTLP/HTTP collector endpoint started by a spec:
// it decodes each POST's protobuf body into a new M (answering 400 when
// it is not one) and keeps it.
type otlpHTTPEndpoint[M gproto.Message] struct {
	mu    sync.Mutex
	posts []otlpPost[M]
}

// startOTLPHTTP serves an endpoint on a loopback port until the spec ends;
// newMsg makes the message a body decodes into, and each decoded one is
// also given to onPost when it is not nil.
func startOTLPHTTP[M gproto.Message](newMsg func() M, onPost func(M)) (*otlpHTTPEndpoint[M], int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	e := &otlpHTTPEndpoint[M]{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := newMsg()
		if gproto.Unmarshal(body, req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if onPost != nil {
			onPost(req)
		}
		e.mu.Lock()
		e.posts = append(e.posts, otlpPost[M]{r.URL.Path, r.Header.Get("Content-Type"), req})
		e.mu.Unlock()
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
	return e, ln.Addr().(*net.TCPAddr).Port
}

// got returns the posts so far.
func (e *otlpHTTPEndpoint[M]) got() []otlpPost[M] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]otlpPost[M](nil), e.posts...)
}
