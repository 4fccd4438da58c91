package httpconn

import "testing"

func TestParseAuthority(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		ip   bool
	}{
		{"a.example.com", "a.example.com", false},
		{"a.example.com:8080", "a.example.com", false},
		{"a.example.com:", "a.example.com:", false},
		{"a.example.com:99999", "a.example.com:99999", false},
		{"127.0.0.1:80", "127.0.0.1", true},
		{"[::1]", "::1", true},
		{"[::1]:443", "::1", true},
		// A bare IPv6 address loses its last group as a port, as in
		// Envoy, and is no address then.
		{"::1", ":", false},
	} {
		host, ip := parseAuthority(tc.in)
		if host != tc.host || ip != tc.ip {
			t.Errorf("parseAuthority(%q) = %q, %v; want %q, %v", tc.in, host, ip, tc.host, tc.ip)
		}
	}
}
