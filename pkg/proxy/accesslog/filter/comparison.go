package filter

import (
	"errors"
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// comparison is a compiled ComparisonFilter: op against a value that a
// runtime key may override.
type comparison struct {
	op         accesslogv3.ComparisonFilter_Op
	value      uint64
	runtimeKey string
	runtime    Runtime
}

// compileComparison compiles a ComparisonFilter; errors start with the
// separator of the field below it (".op: ...", ": ..." for the message).
func compileComparison(c *accesslogv3.ComparisonFilter, rt Runtime) (comparison, error) {
	if c == nil {
		return comparison{}, errors.New(": required")
	}
	switch c.GetOp() {
	case accesslogv3.ComparisonFilter_EQ, accesslogv3.ComparisonFilter_GE, accesslogv3.ComparisonFilter_LE:
	default:
		return comparison{}, fmt.Errorf(".op: unknown operator %d", c.GetOp())
	}
	if c.GetValue() == nil {
		return comparison{}, errors.New(".value: required")
	}
	if c.GetValue().GetRuntimeKey() == "" {
		// RuntimeUInt32 requires its key, as Envoy's validation does.
		return comparison{}, errors.New(".value.runtime_key: must be set")
	}
	return comparison{op: c.GetOp(), value: uint64(c.GetValue().GetDefaultValue()), runtimeKey: c.GetValue().GetRuntimeKey(), runtime: rt}, nil
}

// compare applies the operator to v and the current value.
func (c *comparison) compare(v uint64) bool {
	want := c.value
	if c.runtime != nil {
		want = c.runtime.Uint64(c.runtimeKey, want)
	}
	switch c.op {
	case accesslogv3.ComparisonFilter_GE:
		return v >= want
	case accesslogv3.ComparisonFilter_LE:
		return v <= want
	default:
		return v == want
	}
}

// statusCode compares the response code; 0 when no response was sent.
type statusCode struct{ comparison }

func (s statusCode) Match(e *accesslog.Entry) bool { return s.compare(uint64(e.ResponseCode)) }

// duration compares the request's duration in milliseconds.
type duration struct{ comparison }

func (d duration) Match(e *accesslog.Entry) bool {
	if e.Duration < 0 {
		return false
	}
	return d.compare(uint64(e.Duration.Milliseconds()))
}
