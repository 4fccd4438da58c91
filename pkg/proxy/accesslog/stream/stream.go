// Package stream is the standard stream access loggers
// (envoy.access_loggers.stdout and envoy.access_loggers.stderr): one
// formatted line per entry on the process's standard output or error, the
// usual container logging.
package stream

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// The loggers' names in Outrigger's spelling.
const (
	StdoutName = "proxy.access_loggers.stdout"
	StderrName = "proxy.access_loggers.stderr"
)

// Stdout builds loggers writing to standard output from
// StdoutAccessLog configurations.
type Stdout struct{}

// Compile implements accesslog.SinkFactory.
func (Stdout) Compile(config proto.Message, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	cfg, ok := config.(*streamv3.StdoutAccessLog)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", StdoutName, config)
	}
	return compile(cfg.GetLogFormat(), accesslog.Stdout, ctx)
}

// Stderr builds loggers writing to standard error from
// StderrAccessLog configurations.
type Stderr struct{}

// Compile implements accesslog.SinkFactory.
func (Stderr) Compile(config proto.Message, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	cfg, ok := config.(*streamv3.StderrAccessLog)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", StderrName, config)
	}
	return compile(cfg.GetLogFormat(), accesslog.Stderr, ctx)
}

// compile builds the formatter (Envoy's default format when log_format is
// not set) and opens the stream.
func compile(lf *corev3.SubstitutionFormatString, d accesslog.Destination, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	format := accesslog.Default()
	if lf != nil {
		var err error
		if format, err = accesslog.CompileSubstitution(lf, ctx.Extensions); err != nil {
			return nil, fmt.Errorf("log_format.%w", err)
		}
	}
	if ctx.Open == nil {
		return nil, errors.New("the standard streams cannot be opened here")
	}
	w, err := ctx.Open(d, "")
	if err != nil {
		return nil, err
	}
	return accesslog.LineSink{Format: format, W: w}, nil
}
