package environment

import (
	"testing"

	detectorsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

func TestDetect(t *testing.T) {
	tests := map[string]struct {
		value string
		want  []tracing.Tag
	}{
		"unset":              {value: "", want: nil},
		"pairs":              {value: "a=1,b=two", want: []tracing.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "two"}}},
		"empty pairs":        {value: ",a=1,,", want: []tracing.Tag{{Key: "a", Value: "1"}}},
		"no value":           {value: "a=,b", want: nil},
		"no key":             {value: "=v,c=3", want: []tracing.Tag{{Key: "c", Value: "3"}}},
		"two equals":         {value: "a=b=c", want: nil},
		"doubled equals":     {value: "a==b", want: []tracing.Tag{{Key: "a", Value: "b"}}},
		"nothing is trimmed": {value: " a = b ", want: []tracing.Tag{{Key: " a ", Value: " b "}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := Detector{Getenv: func(k string) string {
				if k != "OTEL_RESOURCE_ATTRIBUTES" {
					t.Errorf("read %s", k)
				}
				return tc.value
			}}
			got, err := d.Detect(&detectorsv3.EnvironmentResourceDetectorConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := (Detector{}).Detect(&emptypb.Empty{}); err == nil {
		t.Error("a configuration of another type was accepted")
	}
}
