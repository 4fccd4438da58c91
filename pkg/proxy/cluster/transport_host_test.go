package cluster

import (
	"strings"
	"testing"
)

// TestTransportHost: addresses that are not ip:port travel through the
// HTTP/2 transports as plain host names and come back whole.
func TestTransportHost(t *testing.T) {
	for _, a := range []string{"envoy://decap/", "envoy://inner/endpoint-7", "/run/some.sock", "@abstract", "envoy://" + strings.Repeat("long", 40) + "/id"} {
		h := transportHost(a)
		if strings.ContainsAny(strings.TrimSuffix(h, ":80"), ":/[]@") {
			t.Errorf("transportHost(%q) = %q: not a plain host name", a, h)
		}
		if got := hostAddress(h); got != a {
			t.Errorf("hostAddress(transportHost(%q)) = %q", a, got)
		}
	}
	for _, a := range []string{"127.0.0.1:8080", "[::1]:443"} {
		if h := transportHost(a); h != a {
			t.Errorf("transportHost(%q) = %q, want it unchanged", a, h)
		}
		if got := hostAddress(a); got != a {
			t.Errorf("hostAddress(%q) = %q, want it unchanged", a, got)
		}
	}
}
