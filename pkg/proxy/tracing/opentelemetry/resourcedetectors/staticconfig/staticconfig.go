// Package staticconfig is the OpenTelemetry tracer's resource detector
// envoy.tracers.opentelemetry.resource_detectors.static_config: resource
// attributes given in the configuration.
package staticconfig

import (
	"fmt"
	"slices"

	detectorsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// Name is the detector's name in Outrigger's spelling.
const Name = "proxy.tracers.opentelemetry.resource_detectors.static_config"

// Detector returns the configured attributes.
type Detector struct{}

// Detect implements opentelemetry.ResourceDetector: the attributes, keys
// sorted; as in Envoy, one with an empty value is skipped (Envoy logs a
// warning).
func (Detector) Detect(config proto.Message) ([]tracing.Tag, error) {
	cfg, ok := config.(*detectorsv3.StaticConfigResourceDetectorConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	keys := make([]string, 0, len(cfg.GetAttributes()))
	for k := range cfg.GetAttributes() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var attrs []tracing.Tag
	for _, k := range keys {
		if v := cfg.GetAttributes()[k]; v != "" {
			attrs = append(attrs, tracing.Tag{Key: k, Value: v})
		}
	}
	return attrs, nil
}
