package extauthz

import (
	"math/rand/v2"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/authzservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// partialBodyHeader tells the service whether the body it got was cut
// at max_request_bytes; a client's own is never passed on.
const partialBodyHeader = "x-envoy-auth-partial-body"

// checkInput is what a CheckRequest is made of besides the stream.
type checkInput struct {
	contextExtensions map[string]string
	// body is the buffered request body (nil when not buffered) and
	// settings how it is sent.
	body     []byte
	settings *bodySettings
	// client is the service asked, the route's override or the
	// filter's, within timeout (0: none).
	client  checker
	timeout time.Duration
	// emitClientSpan: a traced check has a span of its own (the
	// filter's emit_client_span, or the route's).
	emitClientSpan bool
}

// checkRequest builds the CheckRequest of a request as Envoy's
// CheckRequestUtils::createHttpCheck does: the peers' addresses, the
// request's time, id, method, path, host, scheme, protocol, size and
// headers (pseudo-headers included, lower-case names, repeated ones joined
// by ","), the body when buffered, the route's context extensions, and the
// metadata context: the namespaces of metadata_context_namespaces found in
// the request's dynamic metadata (typed metadata, which no Outrigger
// filter sets, stays empty).
func (c *config) checkRequest(s httpfilter.Stream, in checkInput) *authv3.CheckRequest {
	info := s.Info()
	r := s.Request()
	source := &authv3.AttributeContext_Peer{Address: authzservice.SocketAddress(info.RemoteAddress)}
	if svc, ok := s.RequestHeaders().Get("x-envoy-downstream-service-cluster"); ok {
		source.Service = svc
	}
	hr := &authv3.AttributeContext_HttpRequest{
		Id:       strconv.FormatUint(rand.Uint64(), 10),
		Method:   r.Method,
		Path:     r.Path,
		Host:     r.Host,
		Scheme:   r.Scheme,
		Size:     int64(info.BytesReceived),
		Protocol: info.Protocol,
	}
	var raw *corev3.HeaderMap
	if c.encodeRawHeaders {
		raw = &corev3.HeaderMap{}
		hr.HeaderMap = raw
	} else {
		hr.Headers = map[string]string{}
	}
	add := func(name, value string) {
		if name == partialBodyHeader || !c.headerAllowed(name) {
			return
		}
		if raw != nil {
			raw.Headers = append(raw.Headers, &corev3.HeaderValue{Key: name, RawValue: []byte(value)})
			return
		}
		if v, ok := hr.Headers[name]; ok {
			hr.Headers[name] = v + "," + value
			return
		}
		hr.Headers[name] = value
	}
	add(":authority", r.Host)
	add(":path", r.Path)
	add(":method", r.Method)
	add(":scheme", r.Scheme)
	s.RangeRequestHeaders(func(name, value string) bool {
		// Host is :authority, as in Envoy's header map.
		if name != "host" {
			add(name, value)
		}
		return true
	})
	if info.ContentLength >= 0 {
		// Envoy's header map has it; the connection manager keeps it
		// apart.
		add("content-length", strconv.FormatInt(info.ContentLength, 10))
	}
	if in.settings != nil && in.body != nil {
		n := min(len(in.body), in.settings.maxBytes)
		data := in.body[:n]
		if in.settings.packAsBytes {
			hr.RawBody = append([]byte(nil), data...)
		} else {
			hr.Body = authzservice.SanitizeUTF8(data)
		}
		partial := strconv.FormatBool(n != len(in.body))
		if raw != nil {
			raw.Headers = append(raw.Headers, &corev3.HeaderValue{Key: partialBodyHeader, RawValue: []byte(partial)})
		} else {
			hr.Headers[partialBodyHeader] = partial
		}
	}
	destination := &authv3.AttributeContext_Peer{Address: authzservice.SocketAddress(info.LocalAddress), Labels: c.destinationLabels}
	authzservice.SetTLSPeers(source, destination, info.TLS, c.includeCert)
	var session *authv3.AttributeContext_TLSSession
	if c.includeTLS {
		session = authzservice.TLSSession(info.TLS, info.RequestedServerName)
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Source:      source,
		Destination: destination,
		TlsSession:  session,
		Request: &authv3.AttributeContext_Request{
			Time: timestamppb.New(info.Start),
			Http: hr,
		},
		ContextExtensions:    in.contextExtensions,
		MetadataContext:      c.metadataContext(s.DynamicMetadata()),
		RouteMetadataContext: authzservice.PickNamespaces(routeMetadata(s), c.routeNamespaces),
	}}
}

// routeMetadata is the matched route's metadata, nil without one.
func routeMetadata(s httpfilter.Stream) *corev3.Metadata {
	if r := s.Route(); r != nil {
		return r.Metadata
	}
	return nil
}

// metadataContext is the CheckRequest's metadata context.
func (c *config) metadataContext(md *corev3.Metadata) *corev3.Metadata {
	return authzservice.PickNamespaces(md, c.metadataNamespaces)
}

// headerAllowed applies allowed_headers and disallowed_headers.
func (c *config) headerAllowed(name string) bool {
	if c.allowed != nil && !c.allowed.match(name) {
		return false
	}
	return !c.disallowed.match(name)
}
