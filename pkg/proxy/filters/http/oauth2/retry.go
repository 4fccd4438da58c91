package oauth2

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// tokenRetry is retry_policy, as Envoy's convertCoreToRouteRetryPolicy
// makes it the route retry policy of the token request, retrying on
// 5xx,gateway-error,connect-failure,reset: num_retries more tries (1 by
// default) of a request that could not connect, was reset or got a 5xx,
// after the jittered back-off of retry_back_off, each try bounded by
// max_interval (the converted policy's per-try timeout). The token
// endpoint's timeout bounds all the tries together, as the async
// client's timeout does. Zero retries: one try, bounded by the timeout
// only.
type tokenRetry struct {
	retries int
	backoff dns.Backoff
}

// compileTokenRetry reads retry_policy; errors name the field below it.
// retry_on, which the conversion ignores, is refused (its other fields
// the support table refuses, as for every client converting a core
// RetryPolicy).
func compileTokenRetry(p *corev3.RetryPolicy) (tokenRetry, error) {
	if p == nil {
		return tokenRetry{}, nil
	}
	if p.GetRetryOn() != "" {
		return tokenRetry{}, errors.New("retry_on: not supported by Outrigger for the token endpoint (Envoy ignores it there: the token request retries on 5xx,gateway-error,connect-failure,reset)")
	}
	r := tokenRetry{retries: 1}
	if n := p.GetNumRetries(); n != nil {
		r.retries = int(n.GetValue())
	}
	b, err := grpcservice.CompileBackoff(p)
	if err != nil {
		return tokenRetry{}, err
	}
	r.backoff = dns.Backoff{Base: b.Base, Max: b.Max}
	return r, nil
}

// tryResult is one try's outcome: the answer's status and body, or the
// transport's error.
type tryResult struct {
	status int
	body   []byte
	err    error
	// ctx is the try's context, for telling its timeout from the whole
	// exchange's.
	ctx context.Context
}

// retriable reports whether Envoy's router would retry the try: no
// answer (connect failure, reset, the per-try timeout) or a 5xx.
func (t tryResult) retriable() bool { return t.err != nil || t.status >= 500 }

// do runs try, again as the policy allows while ctx lasts; the last
// try's result is returned, with the number of retries made.
func (r tokenRetry) do(ctx context.Context, try func(ctx context.Context) tryResult) (tryResult, int) {
	var bo *dns.BackoffState
	for n := 0; ; n++ {
		tryCtx, cancel := ctx, context.CancelFunc(func() {})
		if r.retries > 0 {
			tryCtx, cancel = context.WithTimeout(ctx, r.backoff.Max)
		}
		res := try(tryCtx)
		res.ctx = tryCtx
		cancel()
		if !res.retriable() || n >= r.retries || ctx.Err() != nil {
			return res, n
		}
		if bo == nil {
			bo = dns.NewBackoffState(&r.backoff, 0, rand.Uint64)
		}
		t := time.NewTimer(bo.Next())
		select {
		case <-t.C:
		case <-ctx.Done():
			// The exchange's timeout struck while waiting: Envoy's
			// router answers that as a timeout, whatever the last try got.
			t.Stop()
			return tryResult{err: ctx.Err(), ctx: ctx}, n
		}
	}
}
