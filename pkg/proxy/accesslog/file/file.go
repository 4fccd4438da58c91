// Package file is the file access logger (envoy.access_loggers.file): one
// formatted line per entry, appended to a file that /reopen_logs reopens.
package file

import (
	"errors"
	"fmt"

	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// Name is the logger's name in Outrigger's spelling.
const Name = "proxy.access_loggers.file"

// Factory builds file access loggers from FileAccessLog configurations.
type Factory struct{}

// Compile implements accesslog.SinkFactory: the path is required, and the
// format is any of the four FileAccessLog forms (Envoy's default without
// one).
func (Factory) Compile(config proto.Message, ctx accesslog.SinkContext) (accesslog.Sink, error) {
	cfg, ok := config.(*filev3.FileAccessLog)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	format, err := accesslog.Compile(cfg, ctx.Extensions)
	if err != nil {
		return nil, err
	}
	if cfg.GetPath() == "" {
		return nil, errors.New("path: must be set")
	}
	if ctx.Open == nil {
		return nil, errors.New("path: access log files cannot be opened here")
	}
	w, err := ctx.Open(accesslog.File, cfg.GetPath())
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	return accesslog.LineSink{Format: format, W: w}, nil
}
