package tap

import (
	"errors"
	"fmt"

	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// Sink receives the traces of a tap configuration.
type Sink interface {
	// Submit takes one buffered trace, or one segment of a streamed
	// trace, of the trace with id. It must not block the request.
	Submit(w *datatapv3.TraceWrapper, id uint64)
}

// Config is a compiled TapConfig: what to trace, how much of the bodies,
// and where the traces go.
type Config struct {
	Match        *Matcher
	MaxRx, MaxTx int
	Format       tapv3.OutputSink_Format
	// Streaming sends http_streamed_trace_segment messages as the
	// exchange passes rather than one http_buffered_trace at its end.
	Streaming bool
	// MinStreamedSent is output_config.min_streamed_sent_bytes (0: unset).
	// Only the tap transport socket uses it (streamed events gathered in
	// one socket_streamed_trace_segment until that many bytes): the HTTP
	// filter refuses it, as Envoy's filter would ignore it.
	MinStreamedSent int
	Sink            Sink
	// Enabled is tap_enabled: the share of requests the tap looks at
	// (nil: all of them), and SampleRate its default value, which traces
	// carry as configured_sample_rate.
	Enabled    *runtime.Fraction
	SampleRate *typev3.FractionalPercent
	// bodies are the generic body matchers of Match, which every piece of
	// a traced body is fed to.
	bodies []*Matcher
}

// sinkKind says which output sink a configuration may name: /tap
// sessions take streaming_admin, static configurations file_per_tap.
type sinkKind uint8

const (
	sinkAdmin sinkKind = iota
	sinkStatic
)

// compileConfig compiles tc but its sink; errors carry field paths below
// field.
func compileConfig(tc *tapv3.TapConfig, field string, kind sinkKind) (*Config, *tapv3.OutputSink, error) {
	if tc == nil {
		return nil, nil, errors.New(field + ": a tap configuration is required")
	}
	enabled, err := compileEnabled(tc.GetTapEnabled(), field+".tap_enabled")
	if err != nil {
		return nil, nil, err
	}
	m, err := compileTapMatch(tc, field)
	if err != nil {
		return nil, nil, err
	}
	oc := tc.GetOutputConfig()
	of := field + ".output_config"
	if oc == nil {
		return nil, nil, errors.New(of + ": required")
	}
	if len(oc.GetSinks()) != 1 {
		return nil, nil, errors.New(of + ".sinks: exactly one sink is required")
	}
	c := &Config{Match: m, MaxRx: DefaultMaxBufferedBytes, MaxTx: DefaultMaxBufferedBytes, Streaming: oc.GetStreaming(), bodies: m.bodyMatchers(nil),
		Enabled: enabled, SampleRate: tc.GetTapEnabled().GetDefaultValue()}
	if v := oc.GetMaxBufferedRxBytes(); v != nil {
		c.MaxRx = int(v.GetValue())
	}
	if v := oc.GetMaxBufferedTxBytes(); v != nil {
		c.MaxTx = int(v.GetValue())
	}
	if v := oc.GetMinStreamedSentBytes(); v != nil {
		if !c.Streaming {
			// Envoy reads it for streamed socket traces only: on a
			// buffered one it would change nothing.
			return nil, nil, errors.New(of + ".min_streamed_sent_bytes: only with output_config.streaming (it batches streamed events)")
		}
		c.MinStreamedSent = int(v.GetValue())
	}
	s := oc.GetSinks()[0]
	sf := of + ".sinks[0]"
	switch f := s.GetFormat(); {
	case f == tapv3.OutputSink_JSON_BODY_AS_BYTES || f == tapv3.OutputSink_JSON_BODY_AS_STRING:
	case kind == sinkAdmin:
		// Envoy's admin sink writes JSON only.
		return nil, nil, fmt.Errorf("%s.format: %s: the admin sink only supports JSON formats", sf, f)
	case f == tapv3.OutputSink_PROTO_BINARY || f == tapv3.OutputSink_PROTO_BINARY_LENGTH_DELIMITED || f == tapv3.OutputSink_PROTO_TEXT:
	default:
		return nil, nil, fmt.Errorf("%s.format: %s is not supported", sf, f)
	}
	c.Format = s.GetFormat()
	switch {
	case s.GetStreamingAdmin() != nil && kind == sinkAdmin:
	case s.GetFilePerTap() != nil && kind == sinkStatic:
		if s.GetFilePerTap().GetPathPrefix() == "" {
			return nil, nil, errors.New(sf + ".file_per_tap.path_prefix: required")
		}
	case s.GetStreamingAdmin() != nil:
		return nil, nil, errors.New(sf + ".streaming_admin: only a /tap request may use the admin sink")
	case kind == sinkAdmin:
		return nil, nil, errors.New(sf + ": only streaming_admin is supported in a /tap request")
	default:
		return nil, nil, errors.New(sf + ": only file_per_tap is supported in a static configuration")
	}
	return c, s, nil
}

// CompileStatic compiles a filter's static_config with its file_per_tap
// sink.
func CompileStatic(tc *tapv3.TapConfig, field string) (*Config, error) {
	c, s, err := compileConfig(tc, field, sinkStatic)
	if err != nil {
		return nil, err
	}
	c.Sink = newFileSink(s.GetFilePerTap().GetPathPrefix(), c.Format)
	return c, nil
}
