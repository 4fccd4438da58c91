package jwtauthn

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice/grpcservicetest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// loopbackServices reaches the cluster "jwks" at addr.
type loopbackServices struct{ addr string }

func (loopbackServices) OpenGRPC(*corev3.GrpcService) (*grpcservice.Channel, error) {
	return nil, fmt.Errorf("no gRPC here")
}

func (l loopbackServices) Cluster(name string) grpcservice.Cluster {
	if name != "jwks" {
		return nil
	}
	return dialer(l.addr)
}

type dialer = grpcservicetest.Dialer

// newTestRemote is a remote JWKS of the server at addr, its clock at *now.
func newTestRemote(t *testing.T, addr string, now *time.Time, timeout time.Duration) *remoteJWKS {
	t.Helper()
	r, err := newRemoteJWKS("http://idp.example/jwks.json", "jwks", timeout, time.Minute, loopbackServices{addr})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return *now }
	store := stats.NewStore()
	r.success, r.failed = store.Counter("ok"), store.Counter("failed")
	t.Cleanup(r.Close)
	return r
}

// TestRemoteJWKSFetch checks that concurrent requests share one fetch
// (with the URI's host and path), the keys are kept for cache_duration and
// fetched again after it.
func TestRemoteJWKSFetch(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	doc := jwks(t, s)
	var fetches atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "idp.example" || r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		<-release
		fmt.Fprint(w, doc)
	}))
	defer srv.Close()
	now := testNow
	r := newTestRemote(t, srv.Listener.Addr().String(), &now, 5*time.Second)

	var wg sync.WaitGroup
	got := make([]*keySet, 20)
	for i := range got {
		wg.Go(func() {
			ks, f := r.get()
			if f != nil {
				<-f.done
				ks = f.keys
			}
			got[i] = ks
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	for i, ks := range got {
		if ks == nil || len(ks.keys) != 1 {
			t.Fatalf("request %d got %v", i, ks)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for concurrent requests", n)
	}
	if ks, f := r.get(); ks == nil || f != nil {
		t.Fatal("the keys were not cached")
	}
	now = now.Add(time.Minute + time.Second)
	ks, f := r.get()
	if ks != nil || f == nil {
		t.Fatal("the keys outlived cache_duration")
	}
	<-f.done
	if f.keys == nil || fetches.Load() != 2 || r.success.Value() != 2 {
		t.Fatalf("refetch: keys %v, fetches %d, success %d", f.keys, fetches.Load(), r.success.Value())
	}
}

// TestRemoteJWKSFailures checks that a server that answers an error, one
// that serves no usable key, one that does not answer (bounded by the
// timeout) and one that is not there all fail the fetch, uncached.
func TestRemoteJWKSFailures(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"503":     func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) },
		"no keys": func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"keys":[{"kty":"EC"}]}`) },
		// Until the client gives up and goes away.
		"hangs": func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			now := testNow
			r := newTestRemote(t, srv.Listener.Addr().String(), &now, 200*time.Millisecond)
			_, f := r.get()
			select {
			case <-f.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the fetch did not end")
			}
			if f.keys != nil || r.failed.Value() != 1 {
				t.Fatalf("keys %v, failed %d", f.keys, r.failed.Value())
			}
			if ks, f2 := r.get(); ks != nil || f2 == nil {
				t.Fatal("a failure was cached")
			}
		})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	now := testNow
	r := newTestRemote(t, addr, &now, time.Second)
	_, f := r.get()
	<-f.done
	if f.keys != nil || r.failed.Value() != 1 {
		t.Fatalf("nothing listening: keys %v, failed %d", f.keys, r.failed.Value())
	}
}

// TestAsyncFetch checks async_fetch's loop: the keys are there without a
// request asking, never expire, and Close ends the loop.
func TestAsyncFetch(t *testing.T) {
	s := newSigner(t, jose.ES256, "k")
	doc := jwks(t, s)
	var fetches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if fetches.Add(1) == 1 {
			w.WriteHeader(503) // the first fails: refetched after failed_refetch_duration
			return
		}
		fmt.Fprint(w, doc)
	}))
	defer srv.Close()
	now := testNow
	r := newTestRemote(t, srv.Listener.Addr().String(), &now, time.Second)
	r.async, r.refetch, r.failedRefetch = true, time.Minute, 50*time.Millisecond
	done := make(chan struct{})
	go func() { r.refresh(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		ks := r.keys
		r.mu.Unlock()
		if ks != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("async_fetch never got the keys")
		}
		time.Sleep(10 * time.Millisecond)
	}
	now = now.Add(24 * time.Hour)
	if ks, f := r.get(); ks == nil || f != nil {
		t.Fatal("async_fetch's keys expired")
	}
	if fetches.Load() != 2 || r.failed.Value() != 1 || r.success.Value() != 1 {
		t.Fatalf("fetches %d, failed %d, success %d", fetches.Load(), r.failed.Value(), r.success.Value())
	}
	r.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the loop")
	}
}
