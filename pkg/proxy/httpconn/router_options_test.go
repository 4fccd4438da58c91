package httpconn

import "testing"

func TestValidStrictHeader(t *testing.T) {
	tests := []struct {
		name, value string
		want        bool
	}{
		{"x-envoy-max-retries", "3", true},
		{"x-envoy-max-retries", " +3 ", true},
		{"x-envoy-max-retries", "-1", false},
		{"x-envoy-max-retries", "abc", false},
		{"x-envoy-max-retries", "", false},
		{"x-envoy-upstream-rq-timeout-ms", "18446744073709551615", true},
		{"x-envoy-upstream-rq-timeout-ms", "18446744073709551616", false},
		{"x-envoy-upstream-rq-per-try-timeout-ms", "1.5", false},
		{"x-envoy-retry-on", "5xx,reset,connect-failure", true},
		{"x-envoy-retry-on", "5xx,nope", false},
		{"x-envoy-retry-grpc-on", "cancelled,unavailable", true},
		{"x-envoy-retry-grpc-on", "5xx", false},
	}
	for _, tc := range tests {
		if got := validStrictHeader(tc.name, tc.value); got != tc.want {
			t.Errorf("validStrictHeader(%q, %q) = %v, want %v", tc.name, tc.value, got, tc.want)
		}
	}
}
