package extauthz

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// httpRetry is the HTTP service's retry_policy, as Envoy's
// convertCoreToRouteRetryPolicy makes it a route retry policy retrying on
// 5xx,gateway-error,connect-failure,reset: num_retries more tries (1 by
// default) of a check that could not connect, was reset or got a 5xx,
// after the jittered back-off of retry_back_off, each try bounded by
// max_interval (the policy's per-try timeout). Zero: no retries.
type httpRetry struct {
	retries int
	backoff dns.Backoff
}

// compileHTTPRetry reads a retry_policy; errors name the field below it.
// retry_on, which that conversion drops, is refused.
func compileHTTPRetry(p *corev3.RetryPolicy) (httpRetry, error) {
	if p == nil {
		return httpRetry{}, nil
	}
	if p.GetRetryOn() != "" {
		return httpRetry{}, errors.New("retry_on: not supported by Outrigger for the HTTP service (Envoy ignores it there: checks retry on 5xx,gateway-error,connect-failure,reset)")
	}
	r := httpRetry{retries: 1}
	if n := p.GetNumRetries(); n != nil {
		r.retries = int(n.GetValue())
	}
	b, err := grpcservice.CompileBackoff(p)
	if err != nil {
		return httpRetry{}, err
	}
	r.backoff = dns.Backoff{Base: b.Base, Max: b.Max}
	return r, nil
}

// answer is an HTTP service's answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends the check request newReq makes (again for each try) through
// rt, tried again as the policy allows, within ctx; retried counts the
// tries after the first.
func (r httpRetry) do(ctx context.Context, rt http.RoundTripper, newReq func(context.Context) (*http.Request, error)) (a answer, retried int, err error) {
	var bo *dns.BackoffState
	for try := 0; ; try++ {
		tryCtx, cancel := ctx, context.CancelFunc(func() {})
		if r.retries > 0 {
			tryCtx, cancel = context.WithTimeout(ctx, r.backoff.Max)
		}
		a, err = once(tryCtx, rt, newReq)
		cancel()
		retriable := err != nil || a.status >= 500
		if !retriable || try >= r.retries || ctx.Err() != nil {
			return a, try, err
		}
		if bo == nil {
			bo = dns.NewBackoffState(&r.backoff, 0, rand.Uint64)
		}
		t := time.NewTimer(bo.Next())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return a, try, err
		}
	}
}

// once is one try: the answer read whole (at most maxHTTPResponseBody).
func once(ctx context.Context, rt http.RoundTripper, newReq func(context.Context) (*http.Request, error)) (answer, error) {
	req, err := newReq(ctx)
	if err != nil {
		return answer{}, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponseBody))
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}
