package filter

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// logType matches why an entry is logged against a set of types.
type logType struct {
	types   map[datav3.AccessLogType]bool
	exclude bool
}

func compileLogType(c *accesslogv3.LogTypeFilter) logType {
	l := logType{types: map[datav3.AccessLogType]bool{}, exclude: c.GetExclude()}
	for _, t := range c.GetTypes() {
		l.types[t] = true
	}
	return l
}

func (l logType) Match(e *accesslog.Entry) bool {
	return l.types[e.Type] != l.exclude
}
