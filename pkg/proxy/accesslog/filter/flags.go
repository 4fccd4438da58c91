package filter

import (
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// responseFlags matches entries with one of the flags set, or with any
// flag when none is configured.
type responseFlags struct {
	flags accesslog.ResponseFlags
}

func compileResponseFlags(c *accesslogv3.ResponseFlagFilter) (responseFlags, error) {
	var r responseFlags
	for i, code := range c.GetFlags() {
		f, ok := accesslog.ParseFlag(code)
		if !ok {
			return r, fmt.Errorf("flags[%d]: unknown response flag %q", i, code)
		}
		r.flags |= f
	}
	return r, nil
}

func (r responseFlags) Match(e *accesslog.Entry) bool {
	if r.flags == 0 {
		return e.ResponseFlags != 0
	}
	return e.ResponseFlags&r.flags != 0
}
