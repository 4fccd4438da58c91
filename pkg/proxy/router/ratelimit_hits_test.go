package router

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// TestHitsAddendNegative checks that is_negative_hits is carried with a
// fixed and a formatted hits_addend, and changes neither value.
func TestHitsAddendNegative(t *testing.T) {
	for name, tc := range map[string]struct {
		h        *routev3.RateLimit_HitsAddend
		want     uint64
		negative bool
	}{
		"number":          {&routev3.RateLimit_HitsAddend{Number: wrapperspb.UInt64(4)}, 4, false},
		"negative number": {&routev3.RateLimit_HitsAddend{Number: wrapperspb.UInt64(4), IsNegativeHits: true}, 4, true},
		"negative format": {&routev3.RateLimit_HitsAddend{Format: "%BYTES_RECEIVED%", IsNegativeHits: true}, 7, true},
	} {
		t.Run(name, func(t *testing.T) {
			rl, err := CompileRateLimit(&routev3.RateLimit{HitsAddend: tc.h, Actions: []*routev3.RateLimit_Action{
				{ActionSpecifier: &routev3.RateLimit_Action_RemoteAddress_{RemoteAddress: &routev3.RateLimit_Action_RemoteAddress{}}}}})
			if err != nil {
				t.Fatal(err)
			}
			if rl.HitsAddend.Negative != tc.negative {
				t.Errorf("Negative = %v, want %v", rl.HitsAddend.Negative, tc.negative)
			}
			n, ok := rl.HitsAddend.Value(&accesslog.Entry{BytesReceived: 7})
			if !ok || n != tc.want {
				t.Errorf("Value = %d, %v; want %d, true", n, ok, tc.want)
			}
		})
	}
}
