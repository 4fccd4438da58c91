package grpcservice

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Envoy's back-off of a core RetryPolicy without retry_back_off
// (Http::Utility::convertCoreToRouteRetryPolicy's defaults).
const (
	defaultRetryBase = time.Second
	maxIntervalTimes = 10
)

// maxRetries is the most retries gRPC's client makes: it caps a call at 5
// attempts.
const maxRetries = 4

// retryCodes are the retry_on conditions a gRPC client can tell apart, and
// the status each is seen as: the five gRPC conditions are the
// grpc-status of the answer, as Envoy's router reads them; the
// connection and stream failures are what gRPC reports as UNAVAILABLE.
var retryCodes = map[string]string{
	"cancelled":          "CANCELLED",
	"deadline-exceeded":  "DEADLINE_EXCEEDED",
	"internal":           "INTERNAL",
	"resource-exhausted": "RESOURCE_EXHAUSTED",
	"unavailable":        "UNAVAILABLE",

	"connect-failure":      "UNAVAILABLE",
	"reset":                "UNAVAILABLE",
	"reset-before-request": "UNAVAILABLE",
	"refused-stream":       "UNAVAILABLE",
}

// Backoff is a retry policy's retry_back_off: the first interval and the
// cap of the jittered exponential back-off.
type Backoff struct {
	Base, Max time.Duration
}

// CompileBackoff reads a core RetryPolicy's retry_back_off as Envoy's
// convertCoreToRouteRetryPolicy does for every client that takes one (gRPC
// services, remote JWKS fetches, the HTTP authorization service): 1 s and
// ten times that without one; a max_interval, when set, not below
// base_interval. Errors name the field below the RetryPolicy.
func CompileBackoff(p *corev3.RetryPolicy) (Backoff, error) {
	b := p.GetRetryBackOff()
	if b == nil {
		return Backoff{Base: defaultRetryBase, Max: maxIntervalTimes * defaultRetryBase}, nil
	}
	base := b.GetBaseInterval().AsDuration()
	if b.GetBaseInterval().CheckValid() != nil || base < time.Millisecond {
		return Backoff{}, errors.New("retry_back_off.base_interval: must be at least 1ms")
	}
	maxI := maxIntervalTimes * base
	if m := b.GetMaxInterval(); m != nil {
		if maxI = m.AsDuration(); m.CheckValid() != nil || maxI < base {
			return Backoff{}, errors.New("retry_back_off.max_interval: max_interval must be greater than or equal to the base_interval")
		}
	}
	return Backoff{Base: base, Max: maxI}, nil
}

// retryServiceConfig turns a GrpcService's retry_policy into the gRPC
// service configuration that retries every call of the channel as Envoy's
// async client retries its initial request: num_retries more attempts (1
// by default) when the answer's status is one of retry_on's, with the
// jittered exponential back-off of retry_back_off. A call is retried only
// until the service has answered its headers, as the router retries a
// stream until the response starts; the messages sent so far are sent
// again. "" when the policy retries nothing (no retry_on, or no retries).
// Errors name the field below retry_policy.
func retryServiceConfig(p *corev3.RetryPolicy) (string, error) {
	retries := uint32(1)
	if n := p.GetNumRetries(); n != nil {
		retries = n.GetValue()
	}
	if retries > maxRetries {
		return "", fmt.Errorf("num_retries: at most %d with Outrigger (gRPC makes at most %d attempts of a call)", maxRetries, maxRetries+1)
	}
	b, err := CompileBackoff(p)
	if err != nil {
		return "", err
	}
	var codes []string
	for _, name := range strings.Split(p.GetRetryOn(), ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		code, ok := retryCodes[name]
		if !ok {
			return "", fmt.Errorf("retry_on: %q is not supported by Outrigger for gRPC services (the gRPC client sees statuses, not HTTP responses; it takes cancelled, deadline-exceeded, internal, resource-exhausted, unavailable, connect-failure, reset, reset-before-request and refused-stream)", name)
		}
		if !slices.Contains(codes, code) {
			codes = append(codes, code)
		}
	}
	if retries == 0 || len(codes) == 0 {
		// Envoy's router retries on nothing then.
		return "", nil
	}
	type retryPolicy struct {
		MaxAttempts          uint32   `json:"maxAttempts"`
		InitialBackoff       string   `json:"initialBackoff"`
		MaxBackoff           string   `json:"maxBackoff"`
		BackoffMultiplier    float64  `json:"backoffMultiplier"`
		RetryableStatusCodes []string `json:"retryableStatusCodes"`
	}
	type methodConfig struct {
		Name        []struct{}  `json:"name"`
		RetryPolicy retryPolicy `json:"retryPolicy"`
	}
	sc := struct {
		MethodConfig []methodConfig `json:"methodConfig"`
	}{MethodConfig: []methodConfig{{
		// One empty name: every method of every service.
		Name: []struct{}{{}},
		RetryPolicy: retryPolicy{
			MaxAttempts:    retries + 1,
			InitialBackoff: seconds(b.Base),
			MaxBackoff:     seconds(b.Max),
			// Envoy's back-off doubles its ceiling at each retry.
			BackoffMultiplier:    2,
			RetryableStatusCodes: codes,
		},
	}}}
	out, err := json.Marshal(sc)
	if err != nil {
		return "", fmt.Errorf("retry_policy: %w", err)
	}
	return string(out), nil
}

// seconds renders d as a protobuf JSON duration.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.9fs", d.Seconds())
}
