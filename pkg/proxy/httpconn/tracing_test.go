package httpconn

import (
	"strconv"
	"testing"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

func TestPercentRounding(t *testing.T) {
	cases := []struct {
		p    *typev3.Percent
		den  uint64
		want fraction
	}{
		{nil, 10000, fraction{Num: 10000, Den: 10000}},
		{&typev3.Percent{Value: 0.01}, 10000, fraction{Num: 1, Den: 10000}},
		{&typev3.Percent{Value: 12.345}, 10000, fraction{Num: 1235, Den: 10000}},
		{&typev3.Percent{Value: 50.4}, 100, fraction{Num: 50, Den: 100}},
		{&typev3.Percent{Value: 0}, 100, fraction{Num: 0, Den: 100}},
	}
	for _, c := range cases {
		if got := percent(c.p, c.den); got != c.want {
			t.Errorf("percent(%v, %d) = %v, want %v", c.p, c.den, got, c.want)
		}
	}
}

func TestFeatureEnabled(t *testing.T) {
	half := fraction{Num: 5000, Den: 10000}
	cases := []struct {
		name   string
		rt     RuntimeValues
		random uint64
		want   bool
	}{
		{"below the default", nil, 4999, true},
		{"at the default", nil, 5000, false},
		{"modulo the denominator", nil, 14999, true},
		{"runtime percent replaces the default", fixedRuntime{"k": 10}, 9, true},
		{"runtime percent, above", fixedRuntime{"k": 10}, 10, false},
		{"runtime zero", fixedRuntime{"k": 0}, 0, false},
		{"runtime above 100 is always", fixedRuntime{"k": 101}, 99, true},
	}
	for _, c := range cases {
		if got := featureEnabled(c.rt, "k", half, c.random); got != c.want {
			t.Errorf("%s: featureEnabled = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUUIDReason(t *testing.T) {
	cases := map[string]traceReason{
		"01234567-89ab-4def-8123-456789abcdef":  notTraceable,
		"01234567-89ab-adef-8123-456789abcdef":  traceServiceForced,
		"01234567-89ab-bdef-8123-456789abcdef":  traceSampling,
		"01234567-89ab-cdef-8123-456789abcdef":  traceClientForced,
		"not-a-uuid":                            notTraceable,
		"01234567-89ab-bdef-8123-456789abcdef0": notTraceable,
	}
	for id, want := range cases {
		if got := uuidReason(id); got != want {
			t.Errorf("uuidReason(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestParseHex8 checks the request id's sampling number against strconv,
// which read it before.
func TestParseHex8(t *testing.T) {
	for _, id := range []string{
		"01234567-89ab", "ffffffff", "FFFFFFFF", "aBcDeF09", "00000000",
		"0123456g", "+1234567", "0x123456", "1234 678", "-1234567", "12_45678",
	} {
		want, err := strconv.ParseUint(id[:8], 16, 64)
		got, ok := parseHex8(id)
		if ok != (err == nil) || got != want {
			t.Errorf("parseHex8(%q) = %d, %v; strconv: %d, %v", id, got, ok, want, err)
		}
	}
}

// TestSpanHeadersMatchGet checks the one-pass search of the span's request
// headers against headerList.Get, name by name: absent, present once,
// given twice (joined), and beside names of the same lengths.
func TestSpanHeadersMatchGet(t *testing.T) {
	lists := [][]field{
		nil,
		{{"host", "a"}, {"user-agent", "curl"}, {"x-request-id", "id"}},
		{{"content-type", "application/grpc"}, {"x-forwarded-proto", "https"}, {"x-client-trace-id", "c"},
			{"x-envoy-downstream-service-cluster", "dc"}, {"user-agent", "u1"}, {"user-agent", "u2"}},
		// Same lengths as the names looked for, other names.
		{{"content-typo", "x"}, {"x-request-ix", "y"}, {"x-forwarded-prot0", "z"}, {"user-agenT", "w"},
			{"x-envoy-downstream-service-clustex", "v"}, {"x-client-trace-i_", "q"}},
		{{"x-request-id", "a"}, {"x-request-id", "b"}, {"x-request-id", "c"}},
	}
	for _, fields := range lists {
		h := headerList{fields: fields}
		var hv spanHeaders
		hv.find(&h)
		for k, name := range spanHeaderNames {
			want, wantOK := h.Get(name)
			if got, ok := hv.get(k); got != want || ok != wantOK {
				t.Errorf("%v: %s = %q, %v; Get gives %q, %v", fields, name, got, ok, want, wantOK)
			}
		}
	}
}
