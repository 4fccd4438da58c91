package upstream

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	preservecasev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/header_formatters/preserve_case/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// HTTP1Format is how requests are written on a cluster's HTTP/1.1
// connections (its http_protocol_options), and how their responses' heads
// are remembered.
type HTTP1Format struct {
	// ProperCase writes field names in proper case
	// (header_key_format.proper_case_words).
	ProperCase bool
	// FullyQualifiedURL writes the request target in absolute form,
	// scheme://host/path, as Envoy's send_fully_qualified_url does for
	// every request but a CONNECT.
	FullyQualifiedURL bool
	// Secure: the cluster's transport is TLS, the scheme of the absolute
	// form when the connection manager's scheme_header_transformation
	// says match_upstream.
	Secure bool
	// PreserveCase is header_key_format.stateful_formatter with Envoy's
	// preserve_case formatter: the field names of the messages this side
	// reads keep their spelling when written on the other side;
	// EnvoyHeadersProperCase (formatter_type_on_envoy_headers
	// PROPER_CASE) writes the names the proxy adds in proper case, and
	// ForwardReasonPhrase (forward_reason_phrase) keeps a response's
	// reason phrase.
	PreserveCase, EnvoyHeadersProperCase, ForwardReasonPhrase bool
}

// preserveCaseNames are the names of Envoy's preserve_case formatter.
var preserveCaseNames = map[string]bool{
	"envoy.http.stateful_header_formatters.preserve_case": true,
	"proxy.http.stateful_header_formatters.preserve_case": true,
}

// ReadHeaderKeyFormat reads an Http1ProtocolOptions' header_key_format
// into f. Errors are *fieldpath.Error with the field below
// header_key_format.
func (f *HTTP1Format) ReadHeaderKeyFormat(k *corev3.Http1ProtocolOptions_HeaderKeyFormat) error {
	f.ProperCase = k.GetProperCaseWords() != nil
	sf := k.GetStatefulFormatter()
	if sf == nil {
		return nil
	}
	var cfg preservecasev3.PreserveCaseFormatterConfig
	switch tc := sf.GetTypedConfig(); {
	case tc == nil:
		if !preserveCaseNames[sf.GetName()] {
			return fieldpath.Errorf("stateful_formatter.name", "unknown stateful header formatter %q (supported: envoy.http.stateful_header_formatters.preserve_case)", sf.GetName())
		}
		return fieldpath.Errorf("stateful_formatter.typed_config", "required")
	case !tc.MessageIs(&cfg):
		return fieldpath.Errorf("stateful_formatter.typed_config", "type %s is not supported by Outrigger (supported: envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig)", tc.MessageName())
	default:
		if err := tc.UnmarshalTo(&cfg); err != nil {
			return fieldpath.Errorf("stateful_formatter.typed_config", "%v", err)
		}
	}
	f.PreserveCase = true
	f.ForwardReasonPhrase = cfg.GetForwardReasonPhrase()
	f.EnvoyHeadersProperCase = cfg.GetFormatterTypeOnEnvoyHeaders() == preservecasev3.PreserveCaseFormatterConfig_PROPER_CASE
	return nil
}
