package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
)

// dialer reaches a test server.
type dialer = grpcservicetest.Dialer

func TestPoster(t *testing.T) {
	var (
		status  atomic.Int32
		conns   atomic.Int32
		lastReq atomic.Value
	)
	status.Store(202)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		lastReq.Store(r.Method + " " + r.URL.Path + " " + r.Host + " " + r.Header.Get("Content-Type") + " " + r.Header.Get("X-Tenant") + " " + string(body))
		w.WriteHeader(int(status.Load()))
		_, _ = io.WriteString(w, "answer")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p, err := NewPoster(dialer(strings.TrimPrefix(srv.URL, "http://")), "collector:9411", "/api/v2/spans", http.Header{"X-Tenant": {"acme"}}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for i := range 3 {
		if err := p.Post(ctx, "application/json", []byte("[1]")); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if got := lastReq.Load(); got != "POST /api/v2/spans collector:9411 application/json acme [1]" {
		t.Errorf("request = %q", got)
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections for 3 posts, want 1 kept alive", conns.Load())
	}

	// A body in two parts arrives joined, with their joined length
	// (net/http reads exactly Content-Length bytes), and either part
	// may be empty.
	for _, parts := range [][2]string{{"[1,", "2]"}, {"", "[1,2]"}, {"[1,2]", ""}} {
		if err := p.PostParts(ctx, "application/json", []byte(parts[0]), []byte(parts[1])); err != nil {
			t.Fatalf("post of %q: %v", parts, err)
		}
		if got := lastReq.Load(); got != "POST /api/v2/spans collector:9411 application/json acme [1,2]" {
			t.Errorf("post of %q: request = %q", parts, got)
		}
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections after the posts in parts, want 1 kept alive", conns.Load())
	}

	// The server drops idle connections: the next post goes on a new one.
	srv.CloseClientConnections()
	if err := p.Post(ctx, "application/json", []byte("[2]")); err != nil {
		t.Fatalf("post after the collector closed the connection: %v", err)
	}

	status.Store(500)
	if err := p.Post(ctx, "application/json", []byte("[3]")); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("post answered 500: error = %v", err)
	}

	if _, err := NewPoster(dialer("x"), "h", "no-slash", nil, 0); err == nil {
		t.Error("a path without '/' was accepted")
	}
}

func TestPosterTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		// Accept and never answer.
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	p, err := NewPoster(dialer(ln.Addr().String()), "h", "/", nil, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Post(context.Background(), "application/json", []byte("[]")); err == nil {
		t.Fatal("a collector that never answers did not fail the post")
	}
}

// TestPosterStopsWhenContextEnds checks that the end of the caller's
// context interrupts an exchange that would otherwise wait for its
// deadline, on the connection of the second post as of the first (the
// watch is registered once for both).
func TestPosterStopsWhenContextEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answer := make(chan struct{})
	go func() {
		// Answer the first post; accept the next and never answer.
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		<-answer
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
		_, _ = io.Copy(io.Discard, c)
	}()
	p, err := NewPoster(dialer(ln.Addr().String()), "h", "/", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	close(answer)
	if err := p.Post(ctx, "application/json", []byte("[]")); err != nil {
		t.Fatalf("first post: %v", err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() { done <- p.Post(ctx, "application/json", []byte("[]")) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a post the collector never answered succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the end of the context did not interrupt the post")
	}
	if err := p.Post(ctx, "application/json", []byte("[]")); err == nil {
		t.Error("a post with an ended context succeeded")
	}
}
