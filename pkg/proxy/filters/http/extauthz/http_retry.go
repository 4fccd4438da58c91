package extauthz

import (
	"context"
	"io"
	"net/http"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// answer is an HTTP service's answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// retried sends the check request newReq makes (again for each try)
// through rt, tried again as the service's retry_policy allows (a try
// that could not connect, was reset or got a 5xx), within ctx.
func retried(ctx context.Context, r grpcservice.ClientRetry, rt http.RoundTripper, newReq func(context.Context) (*http.Request, error)) (a answer, err error) {
	r.Do(ctx, nil, func(ctx context.Context) bool {
		a, err = once(ctx, rt, newReq)
		return err != nil || a.status >= 500
	})
	return a, err
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
