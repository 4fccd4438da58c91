package httpconn

import (
	"errors"
	"fmt"
	"io"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// accessLogger is one configured access log: the line format and where the
// lines go.
type accessLogger struct {
	format *accesslog.Formatter
	// w receives one Write per line, from every connection at once; the
	// server's writer serialises and buffers them.
	w io.Writer
}

// buildAccessLogs compiles access_log and opens each file through open.
// Errors name the field path below the http_connection_manager.
func buildAccessLogs(cfgs []*accesslogv3.AccessLog, open func(string) (io.Writer, error)) ([]accessLogger, error) {
	var out []accessLogger
	for i, al := range cfgs {
		path := fmt.Sprintf("access_log[%d]", i)
		if al.GetFilter() != nil {
			return nil, fmt.Errorf("%s.filter: not supported by Outrigger", path)
		}
		if al.GetTypedConfig() == nil {
			return nil, fmt.Errorf("%s.typed_config: the file access logger's configuration is required", path)
		}
		var file filev3.FileAccessLog
		if err := al.GetTypedConfig().UnmarshalTo(&file); err != nil {
			return nil, fmt.Errorf("%s.typed_config: only the file access logger is supported by Outrigger: %w", path, err)
		}
		format, err := accesslog.Compile(&file)
		if err != nil {
			return nil, fmt.Errorf("%s.typed_config.%w", path, err)
		}
		if file.GetPath() == "" {
			return nil, fmt.Errorf("%s.typed_config.path: must be set", path)
		}
		if open == nil {
			return nil, fmt.Errorf("%s: %w", path, errNoAccessLogWriter)
		}
		w, err := open(file.GetPath())
		if err != nil {
			return nil, fmt.Errorf("%s.typed_config.path: %w", path, err)
		}
		out = append(out, accessLogger{format: format, w: w})
	}
	return out, nil
}

// errNoAccessLogWriter is returned when access logs are configured but the
// server gave no way to open them.
var errNoAccessLogWriter = errors.New("access logs cannot be opened here (no OpenAccessLog)")
