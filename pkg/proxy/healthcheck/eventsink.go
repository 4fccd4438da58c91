package healthcheck

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filesinkv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/health_check/event_sinks/file/v3"
)

// sinkError is an event_logger entry's problem, at field below it.
type sinkError struct{ field, reason string }

// fileSinkPath is the file of an event_logger entry, which must be the
// file sink.
func fileSinkPath(x *corev3.TypedExtensionConfig) (string, *sinkError) {
	var sink filesinkv3.HealthCheckEventFileSink
	if x.GetTypedConfig().MessageIs(&sink) {
		if err := x.GetTypedConfig().UnmarshalTo(&sink); err != nil {
			return "", &sinkError{"typed_config", err.Error()}
		}
		if sink.GetEventLogPath() == "" {
			return "", &sinkError{"typed_config.event_log_path", "must be set"}
		}
		return sink.GetEventLogPath(), nil
	}
	return "", &sinkError{"typed_config", "only the file sink (envoy.health_check.event_sink.file, HealthCheckEventFileSink) is supported by Outrigger"}
}

// EventLogPaths are the files the events go to: event_log_path, then the
// file sinks.
func (c *Config) EventLogPaths() []string {
	if c.EventLogPath == "" {
		return c.EventSinks
	}
	return append([]string{c.EventLogPath}, c.EventSinks...)
}
