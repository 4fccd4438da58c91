// Package tunnelhttp holds what the tcp_proxy and udp_proxy filters'
// tunnels over HTTP share: their headers_to_add, compiled once and
// applied to each tunnel request, and the tunnel response's headers and
// trailers kept as filter state (propagate_response_headers and
// propagate_response_trailers).
package tunnelhttp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Header is one compiled entry of a tunnel's headers_to_add.
type Header struct {
	name      string
	value     *accesslog.Formatter
	keepEmpty bool
	action    corev3.HeaderValueOption_HeaderAppendAction
}

// CompileHeader compiles one of headers_to_add, whose value may use the
// access log's command operators and fmts' extra ones. Errors name the
// field below the entry ("header.key: ...").
func CompileHeader(o *corev3.HeaderValueOption, fmts accesslog.Formatters) (Header, error) {
	h := Header{name: strings.ToLower(o.GetHeader().GetKey()), keepEmpty: o.GetKeepEmptyValue(), action: o.GetAppendAction()}
	switch {
	case h.name == "":
		return h, errors.New("header.key: a header name is required")
	case h.name[0] == ':' || h.name == "host":
		// As Envoy: the request's pseudo-headers and host are the
		// tunnel's own.
		return h, fmt.Errorf("header.key: %q cannot be set (pseudo-headers and host are the tunnel's)", h.name)
	}
	value, err := router.HeaderValueText(o.GetHeader())
	if err != nil {
		return h, fmt.Errorf("header.%w", err)
	}
	//lint:ignore SA1019 Envoy still accepts the deprecated boolean.
	if legacy := o.GetAppend(); legacy != nil {
		if h.action != corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD {
			return h, errors.New("append: cannot be set together with append_action")
		}
		if !legacy.GetValue() {
			h.action = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
		}
	}
	if h.value, err = accesslog.TextWith(accesslog.TranslateLegacyHeaderFormat(value), true, fmts); err != nil {
		return h, fmt.Errorf("header.value: %w", err)
	}
	return h, nil
}

// Apply adds hs to hdr, each value formatted for the connection or
// session e describes, with each entry's append action; an empty value
// is skipped unless its entry keeps empty values.
func Apply(hs []Header, hdr http.Header, e *accesslog.Entry) {
	for _, h := range hs {
		v := string(h.value.AppendValue(nil, e))
		if v == "" && !h.keepEmpty {
			continue
		}
		_, present := hdr[http.CanonicalHeaderKey(h.name)]
		switch h.action {
		case corev3.HeaderValueOption_ADD_IF_ABSENT:
			if !present {
				hdr.Add(h.name, v)
			}
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD:
			hdr.Set(h.name, v)
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
			if present {
				hdr.Set(h.name, v)
			}
		default:
			hdr.Add(h.name, v)
		}
	}
}
