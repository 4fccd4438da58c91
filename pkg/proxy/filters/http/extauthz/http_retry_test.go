package extauthz

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

func TestHTTPRetry(t *testing.T) {
	for name, tc := range map[string]struct {
		policy     *corev3.RetryPolicy
		failures   int32
		wantStatus int
		wantTries  int32
	}{
		"none":                  {nil, 1, 503, 1},
		"default one retry":     {&corev3.RetryPolicy{RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(time.Millisecond)}}, 1, 200, 2},
		"num_retries bounds":    {&corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(2), RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(time.Millisecond)}}, 5, 503, 3},
		"no retries":            {&corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}, 1, 503, 1},
		"a denial is an answer": {&corev3.RetryPolicy{RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(time.Millisecond)}}, -1, 403, 1},
	} {
		t.Run(name, func(t *testing.T) {
			var tries atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := tries.Add(1)
				if b, _ := io.ReadAll(r.Body); string(b) != "body" {
					t.Errorf("try %d got body %q: each try sends it whole", n, b)
				}
				switch {
				case tc.failures < 0:
					w.WriteHeader(403)
				case n <= tc.failures:
					w.WriteHeader(503)
				}
			}))
			defer srv.Close()
			r, err := grpcservice.CompileClientRetry(tc.policy, "the HTTP service")
			if err != nil {
				t.Fatal(err)
			}
			newReq := func(ctx context.Context) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader("body"))
			}
			a, err := retried(context.Background(), r, http.DefaultTransport, newReq)
			if err != nil {
				t.Fatal(err)
			}
			if a.status != tc.wantStatus || tries.Load() != tc.wantTries {
				t.Errorf("status %d after %d tries, want %d after %d", a.status, tries.Load(), tc.wantStatus, tc.wantTries)
			}
		})
	}
}

func TestHTTPRetryConnectFailure(t *testing.T) {
	// Nothing listens: every try fails to connect, and is retried.
	r, err := grpcservice.CompileClientRetry(&corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(2), RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(time.Millisecond)}}, "the HTTP service")
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int32
	newReq := func(ctx context.Context) (*http.Request, error) {
		tries.Add(1)
		return http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:1/", nil)
	}
	if _, err := retried(context.Background(), r, http.DefaultTransport, newReq); err == nil {
		t.Fatal("no error")
	}
	if tries.Load() != 3 {
		t.Errorf("%d tries, want 3", tries.Load())
	}
}
