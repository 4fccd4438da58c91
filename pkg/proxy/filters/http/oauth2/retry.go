package oauth2

import (
	"context"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

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

// retriedToken runs try, again as retry_policy allows while ctx lasts (the
// token endpoint's timeout bounds all the tries together, as the async
// client's timeout does), and returns the last try's result. A timeout
// that strikes during a back-off wait is the result: Envoy's router
// answers it as a timeout, whatever the last try got.
func retriedToken(ctx context.Context, r grpcservice.ClientRetry, try func(ctx context.Context) tryResult) tryResult {
	var res tryResult
	_, interrupted := r.Do(ctx, nil, func(tryCtx context.Context) bool {
		res = try(tryCtx)
		res.ctx = tryCtx
		return res.retriable()
	})
	if interrupted {
		return tryResult{err: ctx.Err(), ctx: ctx}
	}
	return res
}
