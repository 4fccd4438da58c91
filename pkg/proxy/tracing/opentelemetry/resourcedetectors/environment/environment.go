// Package environment is the OpenTelemetry tracer's resource detector
// envoy.tracers.opentelemetry.resource_detectors.environment: resource
// attributes from the OTEL_RESOURCE_ATTRIBUTES environment variable, read
// when the tracer is configured.
package environment

import (
	"fmt"
	"os"
	"strings"

	detectorsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/tracers/opentelemetry/resource_detectors/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// Name is the detector's name in Outrigger's spelling.
const Name = "proxy.tracers.opentelemetry.resource_detectors.environment"

// variable is the environment variable the detector reads.
const variable = "OTEL_RESOURCE_ATTRIBUTES"

// Detector reads the attributes.
type Detector struct {
	// Getenv reads the environment; nil reads the process's.
	Getenv func(string) string
}

// Detect implements opentelemetry.ResourceDetector. The variable is
// "key=value" pairs separated by commas. As in Envoy, empty pairs are
// skipped, and a pair that is not exactly one non-empty key and one
// non-empty value is skipped too (Envoy logs a warning); nothing is
// trimmed or decoded.
func (d Detector) Detect(config proto.Message) ([]tracing.Tag, error) {
	if _, ok := config.(*detectorsv3.EnvironmentResourceDetectorConfig); !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	getenv := d.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var attrs []tracing.Tag
	for _, pair := range strings.Split(getenv(variable), ",") {
		if pair == "" {
			continue
		}
		kv := nonEmpty(strings.Split(pair, "="))
		if len(kv) != 2 {
			continue
		}
		attrs = append(attrs, tracing.Tag{Key: kv[0], Value: kv[1]})
	}
	return attrs, nil
}

// nonEmpty drops the empty tokens, as Envoy's token splitting does.
func nonEmpty(tokens []string) []string {
	out := tokens[:0]
	for _, t := range tokens {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}
