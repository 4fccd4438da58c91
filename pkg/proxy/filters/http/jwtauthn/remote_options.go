package jwtauthn

import (
	"errors"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// refetchBeforeExpiry is how long before cache_duration ends async_fetch
// fetches again (Envoy's RefetchBeforeExpiredSec), so that no request
// has to fetch.
const refetchBeforeExpiry = 5 * time.Second

// InitTargets is implemented by the Services of a listener that waits for
// its filters before it serves (Envoy's listener init manager):
// async_fetch with fast_listener false makes the listener wait for the
// first fetch.
type InitTargets interface {
	// AddInitTarget makes the listener wait until ready is closed before
	// it serves; start is called when the listener starts warming (once
	// the clusters are), possibly more than once.
	AddInitTarget(name string, start func(), ready <-chan struct{})
}

// setRetryPolicy applies remote_jwks' retry_policy as Envoy's
// convertCoreToRouteRetryPolicy turns it into a route retry policy:
// num_retries 1 by default; retry_back_off's base_interval (1 s without
// one) and max_interval (ten times the base by default, not below it),
// which is also each try's timeout. Errors name the field below
// retry_policy; its other fields, which that conversion drops, are
// refused by the support check.
func (r *remoteJWKS) setRetryPolicy(p *corev3.RetryPolicy) error {
	var err error
	r.retry, err = grpcservice.CompileClientRetry(p, "remote_jwks")
	return err
}

// setAsyncFetch applies async_fetch: the keys are fetched in the
// background (see refresh), again refetchBeforeExpiry before
// cache_duration ends, or failed_refetch_duration after a failure. With
// fast_listener false the listener waits for the first fetch (success or
// failure), as Envoy's JwksAsyncFetcher registers an init target; the
// fetches then start when the listener warms. Errors name the field below
// async_fetch.
func (r *remoteJWKS) setAsyncFetch(af *jwtv3.JwksAsyncFetch, svc httpfilter.Services) error {
	r.async, r.failedRefetch = true, defaultFailedRefetch
	if d := af.GetFailedRefetchDuration(); d != nil {
		if r.failedRefetch = d.AsDuration(); d.CheckValid() != nil || r.failedRefetch <= 0 {
			return errors.New("failed_refetch_duration: must be positive")
		}
	}
	r.refetch = r.cacheDuration
	if r.refetch > refetchBeforeExpiry {
		r.refetch -= refetchBeforeExpiry
	}
	if af.GetFastListener() {
		r.start = func() { go r.refresh() }
		return nil
	}
	it, ok := svc.(InitTargets)
	if !ok {
		return errors.New("fast_listener: false needs a listener that waits for its filters, and there is none here")
	}
	r.firstDone = make(chan struct{})
	var once sync.Once
	it.AddInitTarget("Jwks async fetching url="+r.url, func() { once.Do(func() { go r.refresh() }) }, r.firstDone)
	return nil
}
