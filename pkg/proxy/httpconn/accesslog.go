package httpconn

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
)

// buildAccessLogs compiles access_log with the access loggers of the
// extension registry. Errors name the field path below the
// http_connection_manager.
func buildAccessLogs(cfgs []*accesslogv3.AccessLog, deps Deps) (loggers.List, error) {
	return loggers.Compile("access_log", cfgs, loggers.Context{
		Registry: deps.Extensions,
		ByName:   lookupByName(deps.Runtime),
		Sink:     deps.AccessLogs,
		Filter:   logfilter.Context{Runtime: deps.Runtime},
	})
}
