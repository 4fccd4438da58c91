package staticconfig

import (
	"testing"

	detectorsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

func TestDetect(t *testing.T) {
	got, err := Detector{}.Detect(&detectorsv3.StaticConfigResourceDetectorConfig{
		Attributes: map[string]string{"zone": "z1", "empty": "", "app": "shop"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []tracing.Tag{{Key: "app", Value: "shop"}, {Key: "zone", Value: "z1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := (Detector{}).Detect(&emptypb.Empty{}); err == nil {
		t.Error("a configuration of another type was accepted")
	}
}
