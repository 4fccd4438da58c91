package tcpproxy

import (
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

// Envoy's defaults and names for the tunnel's request id.
const (
	defaultRequestIDHeader = "x-request-id"
	defaultRequestIDKey    = "tunnel_request_id"
	// requestIDNamespace is the dynamic metadata namespace the id is
	// kept under, the filter's canonical name.
	requestIDNamespace = "envoy.filters.network.tcp_proxy"
)

// compileRequestID reads request_id_extension, request_id_header and
// request_id_metadata_key. As in Envoy, the header and key only name
// where a generated id goes: without the extension no id is generated,
// so they have no effect of their own.
func (t *tunnel) compileRequestID(tc *tcpproxyv3.TcpProxy_TunnelingConfig, reg *extension.Registry) error {
	var errs []error
	t.requestIDHeader = strings.ToLower(tc.GetRequestIdHeader())
	switch {
	case t.requestIDHeader == "":
		t.requestIDHeader = defaultRequestIDHeader
	case !httpguts.ValidHeaderFieldName(t.requestIDHeader):
		errs = append(errs, fmt.Errorf("request_id_header: %q is not a header name", tc.GetRequestIdHeader()))
	case t.requestIDHeader == "host":
		errs = append(errs, errors.New("request_id_header: host is the tunnel's"))
	}
	t.requestIDKey = tc.GetRequestIdMetadataKey()
	if t.requestIDKey == "" {
		t.requestIDKey = defaultRequestIDKey
	}
	if rid := tc.GetRequestIdExtension(); rid != nil {
		// The extension's options (pack_trace_reason, trace sampling)
		// are about tracing, which a tunnel request does not do: what it
		// contributes here is the id it generates, a random UUID.
		if _, err := requestid.Resolve(reg, rid); err != nil {
			errs = append(errs, fmt.Errorf("request_id_extension.%w", err))
		}
		t.requestID = true
	}
	return errors.Join(errs...)
}

// withRequestID returns md (the connection's dynamic metadata, which it
// does not modify) with id under the tunnel's metadata key.
func (t *tunnel) withRequestID(md *corev3.Metadata, id string) *corev3.Metadata {
	out := &corev3.Metadata{}
	if md != nil {
		out = proto.Clone(md).(*corev3.Metadata)
	}
	if out.FilterMetadata == nil {
		out.FilterMetadata = map[string]*structpb.Struct{}
	}
	ns := out.FilterMetadata[requestIDNamespace]
	if ns == nil {
		ns = &structpb.Struct{}
		out.FilterMetadata[requestIDNamespace] = ns
	}
	if ns.Fields == nil {
		ns.Fields = map[string]*structpb.Value{}
	}
	ns.Fields[t.requestIDKey] = structpb.NewStringValue(id)
	return out
}

// newRequestID returns a request id as Envoy's UUID extension generates
// it.
func newRequestID() string {
	return string(requestid.AppendUUID(make([]byte, 0, 36)))
}
