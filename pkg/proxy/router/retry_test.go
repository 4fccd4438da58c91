package router

import (
	"strings"
	"testing"
	"time"
)

func TestParseRetryOn(t *testing.T) {
	tests := []struct {
		in     string
		grpc   bool
		want   RetryOn
		wantOK bool
	}{
		{in: "5xx", want: RetryOn5xx, wantOK: true},
		{in: " 5xx , gateway-error,,reset", want: RetryOn5xx | RetryOnGatewayError | RetryOnReset, wantOK: true},
		{in: "connect-failure,envoy-ratelimited,retriable-4xx,refused-stream", want: RetryOnConnectFailure | RetryOnEnvoyRateLimited | RetryOnRetriable4xx | RetryOnRefusedStream, wantOK: true},
		{in: "retriable-status-codes,retriable-headers,reset-before-request,http3-post-connect-failure", want: RetryOnRetriableStatusCodes | RetryOnRetriableHeaders | RetryOnResetBeforeRequest | RetryOnHTTP3PostConnectFailure, wantOK: true},
		// Unknown names are skipped, the known ones kept (as in Envoy).
		{in: "5xx,bogus", want: RetryOn5xx, wantOK: false},
		// gRPC names are not x-envoy-retry-on's.
		{in: "unavailable", want: 0, wantOK: false},
		{in: "cancelled,deadline-exceeded,internal,resource-exhausted,unavailable", grpc: true, want: RetryOnGrpc, wantOK: true},
		{in: "5xx", grpc: true, want: 0, wantOK: false},
	}
	for _, tt := range tests {
		parse := ParseRetryOn
		if tt.grpc {
			parse = ParseRetryGrpcOn
		}
		got, ok := parse(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parse(%q, grpc %v) = %b, %v; want %b, %v", tt.in, tt.grpc, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestRetryPolicyCompile(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: [v]
  retry_policy: {retry_on: "5xx,unavailable", num_retries: 4}
  routes:
  - match: {prefix: /own}
    route:
      cluster: c
      retry_policy:
        retry_on: gateway-error
        per_try_timeout: 0.2s
        retry_back_off: {base_interval: 0.1s}
        retriable_status_codes: [418]
        retriable_headers: [{name: x-retry}]
        retriable_request_headers: [{name: x-retriable}]
        retry_host_predicate: [{name: envoy.retry_host_predicates.previous_hosts, typed_config: {"@type": type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate}}]
        host_selection_retry_max_attempts: 3
        rate_limited_retry_back_off: {reset_headers: [{name: Retry-After}, {name: X-RateLimit-Reset, format: UNIX_TIMESTAMP}]}
  - match: {prefix: /direct}
    direct_response: {status: 200}
  - match: {prefix: /}
    route: {cluster: c}
`)
	own := table.Match("v", "/own").RetryPolicy
	if own == nil {
		t.Fatal("the route's own policy is missing")
	}
	if own.RetryOn != RetryOnGatewayError || own.NumRetries != 1 || own.PerTryTimeout != 200*time.Millisecond {
		t.Errorf("own policy = %+v; want gateway-error, 1 retry (the default), 200ms per try", own)
	}
	if own.BaseInterval != 100*time.Millisecond || own.MaxInterval != time.Second {
		t.Errorf("back-off = %v..%v; want 100ms..1s (ten times the base)", own.BaseInterval, own.MaxInterval)
	}
	if !own.PreviousHosts || own.HostSelectionMaxAttempts != 3 {
		t.Errorf("host predicate = %v, %d; want previous_hosts, 3", own.PreviousHosts, own.HostSelectionMaxAttempts)
	}
	if len(own.ResetHeaders) != 2 || own.ResetHeaders[0].Name != "retry-after" || own.ResetHeaders[0].UnixTimestamp || !own.ResetHeaders[1].UnixTimestamp {
		t.Errorf("reset headers = %+v", own.ResetHeaders)
	}
	if own.ResetMaxInterval != DefaultRateLimitedMaximum {
		t.Errorf("rate-limited maximum = %v; want %v", own.ResetMaxInterval, DefaultRateLimitedMaximum)
	}
	if own.Retriable(&Request{Headers: &headers{}}) {
		t.Error("a request without x-retriable is retriable")
	}
	if !own.Retriable(&Request{Headers: &headers{kv: [][2]string{{"x-retriable", "1"}}}}) {
		t.Error("a request with x-retriable is not retriable")
	}
	if !own.MatchesResponse(&headers{kv: [][2]string{{"x-retry", "yes"}}}) || own.MatchesResponse(&headers{}) {
		t.Error("retriable_headers do not match as configured")
	}
	inherited := table.Match("v", "/other").RetryPolicy
	if inherited == nil || inherited.RetryOn != RetryOn5xx|RetryOnGrpcUnavailable || inherited.NumRetries != 4 {
		t.Errorf("inherited policy = %+v; want the virtual host's", inherited)
	}
	if inherited.BaseInterval != DefaultRetryBaseInterval || inherited.MaxInterval != 10*DefaultRetryBaseInterval {
		t.Errorf("default back-off = %v..%v", inherited.BaseInterval, inherited.MaxInterval)
	}
	if table.Match("v", "/direct").RetryPolicy != nil {
		t.Error("a direct response has a retry policy")
	}
}

func TestRetryPolicyErrors(t *testing.T) {
	tests := map[string]struct{ policy, want string }{
		"unknown condition": {`{retry_on: "5xx,sometimes"}`, `routes[0].route.retry_policy.retry_on: "5xx,sometimes" names a condition`},
		"max below base": {`{retry_on: 5xx, retry_back_off: {base_interval: 1s, max_interval: 0.5s}}`,
			"retry_policy.retry_back_off.max_interval: must be at least base_interval"},
		"unknown host predicate": {`{retry_on: 5xx, retry_host_predicate: [{name: envoy.retry_host_predicates.nonsense}]}`,
			`retry_policy.retry_host_predicate[0]: "envoy.retry_host_predicates.nonsense" is not supported`},
		"unknown retry priority": {`{retry_on: 5xx, retry_priority: {name: envoy.retry_priorities.other}}`,
			`retry_policy.retry_priority.name: "envoy.retry_priorities.other" is not supported`},
		"previous priorities without config": {`{retry_on: 5xx, retry_priority: {name: envoy.retry_priorities.previous_priorities}}`,
			"retry_policy.retry_priority.typed_config: previous_priorities needs its config"},
		"update frequency zero": {`{retry_on: 5xx, retry_priority: {name: p, typed_config: {"@type": type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig}}}`,
			"retry_policy.retry_priority.typed_config.update_frequency: must be above 0"},
		"bad retriable header": {`{retry_on: 5xx, retriable_headers: [{name: ""}]}`,
			"retry_policy.retriable_headers[0].name: a header name is required"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(parseRC(t, `
virtual_hosts:
- name: v
  domains: [v]
  routes:
  - match: {prefix: /}
    route: {cluster: c, retry_policy: `+tt.policy+`}
`))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRetryHostPredicates(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: [v]
  routes:
  - match: {prefix: /}
    route:
      cluster: c
      retry_policy:
        retry_on: 5xx
        retry_host_predicate:
        - name: envoy.retry_host_predicates.omit_canary_hosts
        - name: proxy.retry_host_predicates.previous_hosts
        - name: omit
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.retry.host.omit_host_metadata.v3.OmitHostMetadataConfig
            metadata_match: {filter_metadata: {envoy.lb: {version: v1}}}
`)
	p := table.Match("v", "/").RetryPolicy
	if !p.OmitCanary || !p.PreviousHosts || p.OmitMetadata.GetFields()["version"].GetStringValue() != "v1" {
		t.Errorf("predicates: canary %v, previous %v, metadata %v", p.OmitCanary, p.PreviousHosts, p.OmitMetadata)
	}
	if p.HostSelectionMaxAttempts != 0 {
		t.Errorf("host_selection_retry_max_attempts = %d; want Envoy's default 0", p.HostSelectionMaxAttempts)
	}
}

func TestRetryPriority(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: [v]
  routes:
  - match: {prefix: /}
    route:
      cluster: c
      retry_policy:
        retry_on: 5xx
        retry_priority:
          name: envoy.retry_priorities.previous_priorities
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig
            update_frequency: 2
`)
	if got := table.Match("v", "/").RetryPolicy.PriorityUpdateFrequency; got != 2 {
		t.Errorf("update frequency = %d; want 2", got)
	}
}

// TestHedgePolicyInheritance: a route's hedge_policy replaces its virtual
// host's, as Envoy's; without either, no hedging.
func TestHedgePolicyInheritance(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: [v]
  hedge_policy: {hedge_on_per_try_timeout: true}
  routes:
  - match: {prefix: /off}
    route: {cluster: c, hedge_policy: {}}
  - match: {prefix: /}
    route: {cluster: c}
- name: w
  domains: [w]
  routes:
  - match: {prefix: /on}
    route: {cluster: c, hedge_policy: {hedge_on_per_try_timeout: true}}
  - match: {prefix: /}
    route: {cluster: c}
`)
	for _, tc := range []struct {
		host, path string
		want       bool
	}{{"v", "/", true}, {"v", "/off", false}, {"w", "/on", true}, {"w", "/", false}} {
		if got := table.Match(tc.host, tc.path).HedgeOnPerTryTimeout; got != tc.want {
			t.Errorf("%s%s: hedge_on_per_try_timeout = %v; want %v", tc.host, tc.path, got, tc.want)
		}
	}
}
