package grpcservice

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
)

// ClientRetry is the core RetryPolicy of an HTTP client Outrigger runs for
// a filter (the HTTP authorization service, the OAuth2 token endpoint, a
// remote JWKS), as Envoy's convertCoreToRouteRetryPolicy makes it the
// route retry policy of the client's request: retry on
// 5xx,gateway-error,connect-failure,reset, num_retries more tries (1 by
// default) after the jittered exponential back-off of retry_back_off, each
// try bounded by the back-off's max_interval (the converted policy's
// per-try timeout). The zero value, without a policy, tries once with no
// per-try timeout.
type ClientRetry struct {
	// Retries is the most tries after the first.
	Retries int
	// Backoff is retry_back_off; Max is also the per-try timeout (zero
	// without a policy).
	Backoff dns.Backoff
}

// CompileClientRetry reads a client's retry_policy (nil: no retries);
// errors name the field below it. retry_on, which Envoy's conversion
// drops, is refused, the message naming the client (what).
func CompileClientRetry(p *corev3.RetryPolicy, what string) (ClientRetry, error) {
	if p == nil {
		return ClientRetry{}, nil
	}
	if p.GetRetryOn() != "" {
		return ClientRetry{}, errors.New("retry_on: not supported by Outrigger for " + what +
			" (Envoy ignores it there: the request retries on 5xx,gateway-error,connect-failure,reset)")
	}
	r := ClientRetry{Retries: 1}
	if n := p.GetNumRetries(); n != nil {
		r.Retries = int(n.GetValue())
	}
	b, err := CompileBackoff(p)
	if err != nil {
		return ClientRetry{}, err
	}
	r.Backoff = dns.Backoff{Base: b.Base, Max: b.Max}
	return r, nil
}

// Do calls try, and again after the back-off while try reports its
// outcome retriable, retries remain and ctx lasts (and stop, when not nil,
// stays open). Each try gets a context bounded by the per-try timeout
// when there is one. It returns the retries made, and whether ctx's end
// or stop interrupted a back-off wait (the caller then answers as for a
// timeout, whatever the last try got).
func (r ClientRetry) Do(ctx context.Context, stop <-chan struct{}, try func(ctx context.Context) (retriable bool)) (retries int, interrupted bool) {
	var bo *dns.BackoffState
	for n := 0; ; n++ {
		tryCtx, cancel := ctx, context.CancelFunc(func() {})
		if r.Backoff.Max > 0 {
			tryCtx, cancel = context.WithTimeout(ctx, r.Backoff.Max)
		}
		retriable := try(tryCtx)
		cancel()
		if !retriable || n >= r.Retries || ctx.Err() != nil {
			return n, false
		}
		if bo == nil {
			bo = dns.NewBackoffState(&r.Backoff, 0, rand.Uint64)
		}
		t := time.NewTimer(bo.Next())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return n, true
		case <-stop:
			t.Stop()
			return n, true
		}
	}
}
