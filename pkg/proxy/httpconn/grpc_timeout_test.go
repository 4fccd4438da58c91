package httpconn

import (
	"math"
	"testing"
	"time"
)

func TestParseGrpcTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1H", time.Hour, true},
		{"2M", 2 * time.Minute, true},
		{"3S", 3 * time.Second, true},
		{"250m", 250 * time.Millisecond, true},
		{"0m", 0, true},
		{"1500u", 2 * time.Millisecond, true},
		{"1000u", time.Millisecond, true},
		{"1n", time.Millisecond, true},
		{"99999999S", 99999999 * time.Second, true},
		{"000000001S", time.Second, true},
		{"+5S", 5 * time.Second, true},
		{"99999999H", math.MaxInt64, true},
		{"100000000S", 0, false},
		{"", 0, false},
		{"S", 0, false},
		{"5", 0, false},
		{"5s", 0, false},
		{"5X", 0, false},
		{"-5S", 0, false},
		{"5.5S", 0, false},
		{"a5S", 0, false},
		{"+S", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseGrpcTimeout(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseGrpcTimeout(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestAppendGrpcTimeout(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0m"},
		{1500 * time.Millisecond, "1500m"},
		{99999999 * time.Millisecond, "99999999m"},
		{100000000 * time.Millisecond, "100000S"},
		{200000000 * time.Second, "3333333M"},
		{9000000000 * time.Second, "2500000H"},
		{math.MaxInt64, "2562047H"},
	}
	for _, tt := range tests {
		if got := string(appendGrpcTimeout(nil, tt.in)); got != tt.want {
			t.Errorf("appendGrpcTimeout(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
