package bootstrap

import (
	"errors"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// ApplicationLogFormat returns the spdlog pattern the bootstrap's
// application_log_config.log_format sets for the proxy's own log records
// (text_format as it is, json_format as logging.JSONPattern makes it),
// "" when it sets none. Errors name the field path.
func ApplicationLogFormat(b *bootstrapv3.Bootstrap) (string, error) {
	lf := b.GetApplicationLogConfig().GetLogFormat()
	const path = "application_log_config.log_format"
	switch f := lf.GetLogFormat().(type) {
	case *bootstrapv3.Bootstrap_ApplicationLogConfig_LogFormat_TextFormat:
		if f.TextFormat == "" {
			return "", fieldErrorf(path+".text_format", "must not be empty")
		}
		if _, err := logging.CompileFormat(f.TextFormat); err != nil {
			return "", fieldErrorf(path+".text_format", "%v", err)
		}
		return f.TextFormat, nil
	case *bootstrapv3.Bootstrap_ApplicationLogConfig_LogFormat_JsonFormat:
		p, err := logging.JSONPattern(f.JsonFormat)
		if err != nil {
			return "", fieldErrorf(path+".json_format", "%v", err)
		}
		return p, nil
	}
	return "", nil
}

// errLogFormatTwice is Envoy's refusal of both ways to set the format.
var errLogFormatTwice = errors.New("only one of application_log_config.log_format or the --log-format option can be given")

// ApplyApplicationLogFormat sets the format application_log_config gives
// on logs, unless there is none. logFormatSet says whether --log-format
// was given: both is an error, as in Envoy.
func ApplyApplicationLogFormat(b *bootstrapv3.Bootstrap, logFormatSet bool, logs *logging.Registry) error {
	p, err := ApplicationLogFormat(b)
	if err != nil || p == "" {
		return err
	}
	if logFormatSet {
		return fieldErrorf("application_log_config.log_format", "%v", errLogFormatTwice)
	}
	return logs.SetFormat(p)
}
