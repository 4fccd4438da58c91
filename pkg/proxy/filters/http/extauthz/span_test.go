package extauthz

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestFailedAnswer: a check without a response is recorded as the local
// reply Envoy's asynchronous client would have made of it.
func TestFailedAnswer(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		addr string
		want httpAnswer
	}{
		"timeout":            {fmt.Errorf("get: %w", context.DeadlineExceeded), "h:1", httpAnswer{504, "UT", "h:1"}},
		"timeout, no conn":   {context.DeadlineExceeded, "", httpAnswer{504, "UT", ""}},
		"no connection":      {errors.New("dial tcp: connection refused"), "", httpAnswer{503, "UF", ""}},
		"connection dropped": {errors.New("EOF"), "h:1", httpAnswer{503, "UC", "h:1"}},
	} {
		if got := failedAnswer(tc.err, tc.addr); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
	for code, want := range map[int]string{200: "OK", 403: "Forbidden", 504: "Gateway Timeout", 299: "Unknown"} {
		if got := reasonPhrase(code); got != want {
			t.Errorf("reasonPhrase(%d) = %q, want %q", code, got, want)
		}
	}
}
