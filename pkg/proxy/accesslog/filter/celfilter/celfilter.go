// Package celfilter is the access-log extension filter
// envoy.access_loggers.extension_filters.cel: an entry is logged when a
// CEL expression over its attributes evaluates to true, as Envoy's
// ExpressionFilter decides (an evaluation error or a value that is not a
// boolean does not log). Istio's Telemetry API writes its access-log
// filters this way.
package celfilter

import (
	"errors"
	"fmt"
	"sync"

	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/celattrs"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// Name is the extension's name, in the proxy. spelling (Envoy: envoy.).
const Name = "proxy.access_loggers.extension_filters.cel"

// Factory compiles the filter.
type Factory struct{}

var _ filter.ExtensionFactory = Factory{}

// Compile implements filter.ExtensionFactory.
func (Factory) Compile(config proto.Message) (filter.Filter, error) {
	c, ok := config.(*celv3.ExpressionFilter)
	if !ok {
		return nil, errors.New("not an ExpressionFilter")
	}
	if c.GetExpression() == "" {
		return nil, errors.New("expression: must be set")
	}
	env, err := cel.NewEnvWith(cel.OptionsOf(c.GetCelConfig()))
	if err != nil {
		return nil, fmt.Errorf("cel_config: %w", err)
	}
	prg, err := env.CompileText(c.GetExpression())
	if err != nil {
		return nil, fmt.Errorf("expression: %w", err)
	}
	return &exprFilter{prg: prg}, nil
}

// exprFilter is a compiled ExpressionFilter. Match runs on many goroutines
// at once: each evaluation takes its own state from the pool.
type exprFilter struct {
	prg  *cel.Program
	pool sync.Pool
}

// Match implements filter.Filter.
func (f *exprFilter) Match(e *accesslog.Entry) bool {
	st, _ := f.pool.Get().(*celattrs.Attributes)
	if st == nil {
		st = new(celattrs.Attributes)
	}
	ok := f.prg.Matches(st.Fill(e))
	st.Reset() // drop the entry's references before pooling
	f.pool.Put(st)
	return ok
}
