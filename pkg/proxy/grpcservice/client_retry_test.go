package grpcservice

import (
	"context"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fastPolicy retries n times after 1 ms back-offs (10 ms per try).
func fastPolicy(n uint32) *corev3.RetryPolicy {
	return &corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(n), RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(time.Millisecond)}}
}

func TestClientRetryDo(t *testing.T) {
	for name, tc := range map[string]struct {
		policy            *corev3.RetryPolicy
		failures          int
		wantTries, wantRe int
	}{
		"no policy: one try":       {nil, 5, 1, 0},
		"default: one retry":       {&corev3.RetryPolicy{RetryBackOff: fastPolicy(0).RetryBackOff}, 5, 2, 1},
		"num_retries bounds":       {fastPolicy(3), 10, 4, 3},
		"success ends the retries": {fastPolicy(3), 1, 2, 1},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := CompileClientRetry(tc.policy, "the test")
			if err != nil {
				t.Fatal(err)
			}
			tries := 0
			re, interrupted := r.Do(context.Background(), nil, func(ctx context.Context) bool {
				tries++
				_, hasDeadline := ctx.Deadline()
				if hasDeadline != (tc.policy != nil) {
					t.Errorf("try %d: per-try deadline %v with a policy %v", tries, hasDeadline, tc.policy != nil)
				}
				return tries <= tc.failures
			})
			if tries != tc.wantTries || re != tc.wantRe || interrupted {
				t.Errorf("%d tries, %d retries, interrupted %v; want %d, %d, false", tries, re, interrupted, tc.wantTries, tc.wantRe)
			}
		})
	}
}

func TestClientRetryInterrupted(t *testing.T) {
	// A back-off of at least 10 s: the wait is cut short by stop, or by
	// the context's end.
	slow := &corev3.RetryPolicy{NumRetries: wrapperspb.UInt32(3), RetryBackOff: &corev3.BackoffStrategy{BaseInterval: durationpb.New(10 * time.Second), MaxInterval: durationpb.New(20 * time.Second)}}
	r, err := CompileClientRetry(slow, "the test")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if re, interrupted := r.Do(context.Background(), stop, func(context.Context) bool { return true }); re != 0 || !interrupted {
		t.Errorf("stop: %d retries, interrupted %v", re, interrupted)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if re, interrupted := r.Do(ctx, nil, func(context.Context) bool { return true }); re != 0 || !interrupted {
		t.Errorf("context: %d retries, interrupted %v", re, interrupted)
	}
}

func TestCompileClientRetryRefusesRetryOn(t *testing.T) {
	_, err := CompileClientRetry(&corev3.RetryPolicy{RetryOn: "5xx"}, "the test")
	if err == nil || !strings.HasPrefix(err.Error(), "retry_on: not supported by Outrigger for the test") {
		t.Errorf("error %v", err)
	}
}
