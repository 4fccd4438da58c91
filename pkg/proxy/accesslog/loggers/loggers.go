// Package loggers compiles an access_log list into the loggers that run
// it: each entry's filter, and its sink found in the extension registry by
// the type of its typed_config (or by its name). The HTTP connection
// manager logs every finished request through a List.
package loggers

import (
	"errors"
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// Category is the extension category of access loggers.
const Category = "envoy.access_loggers"

// Context is what compiling access loggers uses of the server.
type Context struct {
	// Registry holds the access logger extensions.
	Registry *extension.Registry
	// ByName allows loggers named without typed_config (Envoy's runtime
	// guard no_extension_lookup_by_name unset).
	ByName bool
	// Sink and Filter are handed to the sinks and filters.
	Sink   accesslog.SinkContext
	Filter filter.Context
}

// logger is one access_log entry.
type logger struct {
	filter filter.Filter // nil logs every entry
	sink   accesslog.Sink
}

// List is a compiled access_log list. The zero value logs nothing.
type List struct {
	loggers []logger
}

// Compile compiles an access_log list, reporting every entry's error at
// once. Errors name the field path from the list ("access_log[0].filter.
// ..."); prefix names the list's own path.
func Compile(prefix string, cfgs []*accesslogv3.AccessLog, ctx Context) (List, error) {
	var (
		l    List
		errs []error
	)
	for i, al := range cfgs {
		path := fmt.Sprintf("%s[%d]", prefix, i)
		lg, err := compileOne(al, ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		l.loggers = append(l.loggers, lg)
	}
	if err := errors.Join(errs...); err != nil {
		// The sinks compiled so far may hold resources.
		_ = l.Close()
		return List{}, err
	}
	return l, nil
}

// compileOne compiles one AccessLog; errors name the field below it.
func compileOne(al *accesslogv3.AccessLog, ctx Context) (logger, error) {
	var lg logger
	if al.GetFilter() != nil {
		fctx := ctx.Filter
		if fctx.Extensions == nil {
			// The extension filters live in the loggers' registry.
			fctx.Extensions, fctx.ByName = ctx.Registry, ctx.ByName
		}
		f, err := filter.Compile(al.GetFilter(), fctx)
		if err != nil {
			return lg, fmt.Errorf("filter.%w", err)
		}
		lg.filter = f
	}
	ext, msg, err := ctx.Registry.Resolve(extension.Ref{
		Kind: "access logger", Category: Category, Name: al.GetName(), Config: al.GetTypedConfig(),
	}, ctx.ByName)
	if err != nil {
		return lg, err
	}
	factory, ok := ext.Factory.(accesslog.SinkFactory)
	if !ok {
		return lg, fmt.Errorf("typed_config: extension %q is not an access logger", ext.Name)
	}
	sinkCtx := ctx.Sink
	if sinkCtx.Extensions == nil {
		// Formats find their formatter extensions where the loggers are.
		sinkCtx.Extensions = ctx.Registry
	}
	if lg.sink, err = factory.Compile(msg, sinkCtx); err != nil {
		return lg, fmt.Errorf("typed_config.%w", err)
	}
	return lg, nil
}

// Add appends a sink that logs every entry (the admin's
// access_log_path, which has no filter).
func (l *List) Add(s accesslog.Sink) {
	l.loggers = append(l.loggers, logger{sink: s})
}

// Empty reports whether the list logs nothing, so that callers can skip
// filling an entry.
func (l *List) Empty() bool { return len(l.loggers) == 0 }

// ReadsUpstreamConnection reports whether a logger of the list may read
// an entry's UpstreamLocalAddress or UpstreamTLS (see
// accesslog.UpstreamConnectionReader).
func (l *List) ReadsUpstreamConnection() bool {
	for _, lg := range l.loggers {
		if r, ok := lg.sink.(accesslog.UpstreamConnectionReader); !ok || r.ReadsUpstreamConnection() {
			return true
		}
	}
	return false
}

// Log records e with every logger whose filter accepts it. buf is scratch
// space, returned for reuse. The error is the first sink's failure; the
// other loggers still log.
func (l *List) Log(buf []byte, e *accesslog.Entry) ([]byte, error) {
	var first error
	for i := range l.loggers {
		lg := &l.loggers[i]
		if lg.filter != nil && !lg.filter.Match(e) {
			continue
		}
		var err error
		if buf, err = lg.sink.Log(buf, e); err != nil && first == nil {
			first = err
		}
	}
	return buf, first
}

// Close closes the sinks that hold resources (accesslog.Closer), which
// deliver what they buffer first and drop what they are given afterwards.
func (l *List) Close() error {
	var errs []error
	for _, lg := range l.loggers {
		if c, ok := lg.sink.(accesslog.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
