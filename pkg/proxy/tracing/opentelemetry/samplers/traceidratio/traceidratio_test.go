package traceidratio

import (
	"encoding/hex"
	"testing"

	samplersv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/samplers/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing/opentelemetry"
)

func trace(t *testing.T, h string) tracing.TraceID {
	t.Helper()
	var id tracing.TraceID
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != len(id) {
		t.Fatalf("bad trace id %q", h)
	}
	copy(id[:], b)
	return id
}

func TestSample(t *testing.T) {
	compile := func(num uint32, den typev3.FractionalPercent_DenominatorType) opentelemetry.Sampler {
		s, err := Factory{}.Compile(&samplersv3.TraceIdRatioBasedSamplerConfig{
			SamplingPercentage: &typev3.FractionalPercent{Numerator: num, Denominator: den},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The first 8 bytes, little-endian: 0x0000000000000005 and 0x...63
	// (99), whatever the second half.
	five := trace(t, "0500000000000000ffffffffffffffff")
	ninetyNine := trace(t, "6300000000000000ffffffffffffffff")
	tests := map[string]struct {
		s    opentelemetry.Sampler
		id   tracing.TraceID
		want bool
	}{
		"0%":                  {s: compile(0, typev3.FractionalPercent_HUNDRED), id: five, want: false},
		"10% takes 5":         {s: compile(10, typev3.FractionalPercent_HUNDRED), id: five, want: true},
		"10% leaves 99":       {s: compile(10, typev3.FractionalPercent_HUNDRED), id: ninetyNine, want: false},
		"100% takes 99":       {s: compile(100, typev3.FractionalPercent_HUNDRED), id: ninetyNine, want: true},
		"5 in 10000 leaves 5": {s: compile(5, typev3.FractionalPercent_TEN_THOUSAND), id: five, want: false},
		"6 in 10000 takes 5":  {s: compile(6, typev3.FractionalPercent_TEN_THOUSAND), id: five, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := tc.s.Sample(opentelemetry.SamplingParams{Trace: tc.id, Parent: true, ParentSampled: !tc.want, ParentTraceState: "k=v"})
			if r.Sampled != tc.want || r.TraceState != "k=v" {
				t.Errorf("got %+v, want sampled %v with the parent's tracestate", r, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(&emptypb.Empty{}, nil); err == nil {
		t.Error("a configuration of another type was accepted")
	}
}
