package httpconn

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	logfilter "github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// localReplies is local_reply_config: the mappers that rewrite the
// status, body and headers of the replies the proxy makes itself, and the
// format of their bodies. A nil *localReplies leaves replies as they are.
type localReplies struct {
	mappers []replyMapper
	// body is body_format, nil for the body as it is (text/plain).
	body *bodyFormat
}

// readsUpstreamConnection reports whether a body or header format may read
// the access-log entry's upstream connection; nil reads nothing.
func (lr *localReplies) readsUpstreamConnection() bool {
	if lr == nil {
		return false
	}
	if lr.body != nil && lr.body.f.ReadsUpstreamConnection() {
		return true
	}
	for i := range lr.mappers {
		m := &lr.mappers[i]
		if m.headers.ReadsUpstreamConnection() || (m.format != nil && m.format.f.ReadsUpstreamConnection()) {
			return true
		}
	}
	return false
}

// replyMapper is one ResponseMapper: the first whose filter matches a
// reply rewrites it.
type replyMapper struct {
	filter  logfilter.Filter
	status  int     // 0 keeps the status
	body    *string // nil keeps the body
	headers router.HeaderMutation
	format  *bodyFormat // nil uses the configuration's body_format
}

// bodyFormat is a compiled SubstitutionFormatString for reply bodies.
type bodyFormat struct {
	f           *accesslog.Formatter
	contentType string
}

// readLocalReplies compiles local_reply_config; nil when it is unset.
// Errors name the field below it. reg holds the formatter extensions the
// body formats may name.
func readLocalReplies(cfg *hcmv3.LocalReplyConfig, ctx logfilter.Context, reg *extension.Registry) (*localReplies, error) {
	if cfg == nil {
		return nil, nil
	}
	lr := &localReplies{}
	var err error
	if cfg.GetBodyFormat() != nil {
		if lr.body, err = compileBodyFormat(cfg.GetBodyFormat(), reg); err != nil {
			return nil, fmt.Errorf("body_format.%w", err)
		}
	}
	for i, mc := range cfg.GetMappers() {
		m := replyMapper{status: int(mc.GetStatusCode().GetValue())}
		if m.filter, err = logfilter.Compile(mc.GetFilter(), ctx); err != nil {
			return nil, fmt.Errorf("mappers[%d].filter.%w", i, err)
		}
		if mc.GetBody() != nil {
			b, err := inlineData(mc.GetBody())
			if err != nil {
				return nil, fmt.Errorf("mappers[%d].body.%w", i, err)
			}
			m.body = &b
		}
		if m.headers, err = router.CompileHeaderMutation(mc.GetHeadersToAdd(), nil, fmt.Sprintf("mappers[%d].headers_to_add", i), ""); err != nil {
			return nil, err
		}
		if mc.GetBodyFormatOverride() != nil {
			if m.format, err = compileBodyFormat(mc.GetBodyFormatOverride(), reg); err != nil {
				return nil, fmt.Errorf("mappers[%d].body_format_override.%w", i, err)
			}
		}
		lr.mappers = append(lr.mappers, m)
	}
	return lr, nil
}

// compileBodyFormat compiles a body format; its content type is
// content_type, else text/plain for text and application/json for JSON.
func compileBodyFormat(sf *corev3.SubstitutionFormatString, reg *extension.Registry) (*bodyFormat, error) {
	f, err := accesslog.CompileSubstitution(sf, reg)
	if err != nil {
		return nil, err
	}
	ct := sf.GetContentType()
	if ct == "" {
		ct = "text/plain"
		if sf.GetJsonFormat() != nil {
			ct = "application/json"
		}
	}
	return &bodyFormat{f: f, contentType: ct}, nil
}

// inlineData reads an inline DataSource (a mapper's body) or an
// environment variable, once.
func inlineData(ds *corev3.DataSource) (string, error) {
	switch s := ds.GetSpecifier().(type) {
	case *corev3.DataSource_InlineString:
		return s.InlineString, nil
	case *corev3.DataSource_InlineBytes:
		return string(s.InlineBytes), nil
	case *corev3.DataSource_EnvironmentVariable:
		return datasource.Env(s.EnvironmentVariable)
	}
	name := "specifier"
	if m := ds.ProtoReflect(); ds != nil {
		if fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("specifier")); fd != nil {
			name = string(fd.Name())
		}
	}
	return "", fmt.Errorf("%s: not supported by Outrigger (only inline_string, inline_bytes and environment_variable are)", name)
}

// rewrite applies the configuration to a local reply of status and body
// about to be sent on s, whose response headers it may edit. It returns
// the status, body and content type to send, and whether the body was
// reformatted. The filters see the reply's status and the stream's
// response flags, as Envoy's do.
func (lr *localReplies) rewrite(s *stream, status int, body string) (int, string, string) {
	e := &s.entry
	e.ResponseCode, e.ResponseFlags, e.ResponseCodeDetails = status, s.flags, s.details
	e.ResponseHeaders = &s.respHeaders
	format := lr.body
	for i := range lr.mappers {
		m := &lr.mappers[i]
		if !m.filter.Match(e) {
			continue
		}
		if m.body != nil {
			body = *m.body
		}
		m.headers.Apply(&s.respHeaders, e)
		if m.status != 0 {
			status = m.status
			e.ResponseCode = status
		}
		if m.format != nil {
			format = m.format
		}
		break
	}
	if format == nil {
		return status, body, "text/plain"
	}
	e.LocalReplyBody = body
	out := string(format.f.Append(nil, e))
	e.LocalReplyBody = ""
	return status, out, format.contentType
}
