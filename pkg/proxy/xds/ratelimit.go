package xds

import (
	"context"
	"errors"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// Envoy's rate_limit_settings defaults: a bucket of 100 tokens refilled
// at 10 a second.
const (
	defaultRateLimitTokens = 100
	defaultRateLimitFill   = 10
)

// RateLimit is a stream's rate_limit_settings: a token bucket that every
// request takes a token from, as Envoy's GrpcStream limits its requests.
type RateLimit struct {
	// MaxTokens is the bucket's size (full at start); 0 is Envoy's 100.
	MaxTokens uint32
	// FillRate is the tokens added per second; 0 is Envoy's 10.
	FillRate float64
}

// limiter is the bucket, nil without settings.
func (r *RateLimit) limiter() (*rate.Limiter, error) {
	if r == nil {
		return nil, nil
	}
	tokens, fill := r.MaxTokens, r.FillRate
	if tokens == 0 {
		tokens = defaultRateLimitTokens
	}
	if fill == 0 {
		fill = defaultRateLimitFill
	}
	if fill < 0 || math.IsNaN(fill) || math.IsInf(fill, 0) {
		return nil, errors.New("rate_limit_settings.fill_rate: must be a positive number")
	}
	return rate.NewLimiter(rate.Limit(fill), int(min(tokens, math.MaxInt32))), nil
}

// takeToken waits for a token before a request is sent: a request that
// finds the bucket empty counts control_plane.rate_limit_enforced and
// shows in control_plane.pending_requests until it goes, as Envoy's
// queued requests do. A stream that ends meanwhile ends the wait.
func (a *ADS) takeToken(ctx context.Context) error {
	if a.limiter == nil {
		return nil
	}
	r := a.limiter.Reserve()
	delay := r.Delay()
	if delay == 0 {
		return nil
	}
	a.rateLimitEnforced.Inc()
	a.pendingRequests.Inc()
	defer a.pendingRequests.Dec()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	}
}
