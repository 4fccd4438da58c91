package extauthz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// maxHTTPResponseBody bounds what is read of an HTTP authorization
// service's response body: a denied request's reply carries it.
const maxHTTPResponseBody = 1 << 20

// headersToRemoveHeader is the response header in which an HTTP service
// names request headers to remove.
const headersToRemoveHeader = "x-envoy-auth-headers-to-remove"

// httpClient asks an HTTP authorization service: the request goes to the
// service's cluster with the original method, the original path behind
// path_prefix, the CheckRequest's headers (the allowed ones) and, with
// with_request_body, the body.
// 200 allows; a 5xx status is a failure; any other status denies.
type httpClient struct {
	transport *http.Transport
	// cluster is server_uri.cluster, reached through svc: the check's
	// span is named and tagged after it.
	cluster string
	svc     httpfilter.Services

	pathPrefix string
	// pathOverride, when set, is the whole path of every check request
	// (the client's path and query are not sent).
	pathOverride string
	// headersToAdd are set on every check request: literal values, or
	// values with % command operators the filter renders per request
	// (checkCall.headers).
	headersToAdd []formattedHeader
	// The response headers that go to the upstream request (set, or
	// added), to the client on success, and to the client's reply on a
	// denial (clientAll: all of them but Host).
	upstream, upstreamAppend, clientOnSuccess, client matchers
	clientAll                                         bool
	// toMetadata selects the response headers recorded as dynamic
	// metadata (dynamic_metadata_from_headers).
	toMetadata matchers
	// retry is retry_policy.
	retry grpcservice.ClientRetry
}

// newHTTPClient compiles an HttpService; the timeout is server_uri's,
// else def (0: none).
func newHTTPClient(hs *extauthzv3.HttpService, svc httpfilter.Services, def time.Duration) (*httpClient, time.Duration, error) {
	retry, err := grpcservice.CompileClientRetry(hs.GetRetryPolicy(), "the HTTP service")
	if err != nil {
		return nil, 0, fmt.Errorf("retry_policy.%w", err)
	}
	uri := hs.GetServerUri()
	if uri == nil {
		return nil, 0, errors.New("server_uri: must be set")
	}
	name := uri.GetCluster()
	if name == "" {
		return nil, 0, errors.New("server_uri.cluster: must be set")
	}
	if svc == nil {
		return nil, 0, errors.New("server_uri.cluster: no cluster can be reached")
	}
	timeout := def
	if uri.GetTimeout() != nil {
		timeout = uri.GetTimeout().AsDuration()
	}
	if timeout < 0 {
		return nil, 0, errors.New("server_uri.timeout: must not be negative")
	}
	if p := hs.GetPathPrefix(); p != "" && !strings.HasPrefix(p, "/") {
		return nil, 0, errors.New("path_prefix: should start with \"/\"")
	}
	if p := hs.GetPathOverride(); p != "" {
		if hs.GetPathPrefix() != "" {
			return nil, 0, errors.New("path_override: only one of path_prefix or path_override may be set")
		}
		if !strings.HasPrefix(p, "/") {
			return nil, 0, errors.New("path_override: should start with \"/\"")
		}
	}
	c := &httpClient{cluster: name, svc: svc, pathPrefix: hs.GetPathPrefix(), pathOverride: hs.GetPathOverride()}
	req := hs.GetAuthorizationRequest()
	for i, h := range req.GetHeadersToAdd() {
		k := strings.ToLower(h.GetKey())
		if k == "" {
			return nil, 0, fmt.Errorf("authorization_request.headers_to_add[%d].key: must be set", i)
		}
		value, err := router.HeaderValueText(h)
		if err != nil {
			return nil, 0, fmt.Errorf("authorization_request.headers_to_add[%d].%w", i, err)
		}
		f, err := accesslog.Text(accesslog.TranslateLegacyHeaderFormat(value), true)
		if err != nil {
			return nil, 0, fmt.Errorf("authorization_request.headers_to_add[%d].value: %w", i, err)
		}
		fh := formattedHeader{name: k}
		if lit, ok := f.Literal(); ok {
			fh.value = lit
		} else {
			fh.format = f
		}
		c.headersToAdd = append(c.headersToAdd, fh)
	}
	c.retry = retry
	resp := hs.GetAuthorizationResponse()
	if c.upstream, err = compileMatchers(resp.GetAllowedUpstreamHeaders(), "authorization_response.allowed_upstream_headers"); err != nil {
		return nil, 0, err
	}
	if c.upstreamAppend, err = compileMatchers(resp.GetAllowedUpstreamHeadersToAppend(), "authorization_response.allowed_upstream_headers_to_append"); err != nil {
		return nil, 0, err
	}
	if c.clientOnSuccess, err = compileMatchers(resp.GetAllowedClientHeadersOnSuccess(), "authorization_response.allowed_client_headers_on_success"); err != nil {
		return nil, 0, err
	}
	if c.toMetadata, err = compileMatchers(resp.GetDynamicMetadataFromHeaders(), "authorization_response.dynamic_metadata_from_headers"); err != nil {
		return nil, 0, err
	}
	if c.client, err = compileMatchers(resp.GetAllowedClientHeaders(), "authorization_response.allowed_client_headers"); err != nil {
		return nil, 0, err
	}
	if len(c.client) == 0 {
		c.clientAll = true
	} else {
		// With a list, Envoy adds these to it.
		c.client = append(c.client, exactName("www-authenticate"), exactName("location"))
	}
	c.transport = httpfilter.ClusterTransport(svc, name, 16)
	return c, timeout, nil
}

// check implements checker. A traced request's check carries the trace
// context of sp (its client span, or the request's own).
func (c *httpClient) check(ctx context.Context, cr *authv3.CheckRequest, rendered []string) *response {
	sp := httpSpanOf(ctx)
	hr := cr.GetAttributes().GetRequest().GetHttp()
	body := hr.GetBody()
	if raw := hr.GetRawBody(); len(raw) > 0 {
		body = string(raw)
	}
	// The request's strings are views of buffers later requests reuse, and
	// an HTTP/2 client keeps what it indexes in its HPACK table: it gets
	// copies.
	path := strings.Clone(c.pathPrefix + hr.GetPath())
	if c.pathOverride != "" {
		path = c.pathOverride
	}
	// Each try sends a request of its own (a retry sends the body
	// again, as Envoy buffers it for retries).
	newReq := func(ctx context.Context) (*http.Request, error) {
		// The service is reached by cluster; the URL's host only names it.
		req, err := http.NewRequestWithContext(ctx, strings.Clone(hr.GetMethod()), "http://ext-authz"+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		// The path as the client sent it, not re-encoded (the query
		// follows it).
		req.URL.Opaque, _, _ = strings.Cut(path, "?")
		req.Host = strings.Clone(hr.GetHost())
		req.ContentLength = int64(len(body))
		if len(body) == 0 {
			req.Body = http.NoBody
		}
		for name, value := range hr.GetHeaders() {
			if name == "content-length" || strings.HasPrefix(name, ":") || name == "host" {
				continue
			}
			// The CheckRequest holds only the headers the service may see
			// (see httpAllowedHeaders).
			req.Header.Set(name, strings.Clone(value))
		}
		if _, ok := req.Header["User-Agent"]; !ok {
			// Go's client would add its own; Envoy adds none.
			req.Header["User-Agent"] = []string{""}
		}
		for i, h := range c.headersToAdd {
			v := h.value
			if h.format != nil {
				v = rendered[i]
			}
			req.Header.Set(h.name, v)
		}
		// The check's trace context goes last, as Envoy's client
		// injects it into the request it was given.
		for name, vs := range sp.Header() {
			req.Header[name] = vs
		}
		return req, nil
	}
	var host hostSeen
	if sp.Recording() {
		ctx = host.watch(ctx)
	}
	resp, err := retried(ctx, c.retry, c.transport, newReq)
	if err != nil {
		r := errorResponse(err.Error())
		r.http = failedAnswer(err, host.address())
		return r
	}
	rbody := resp.body
	answered := httpAnswer{status: resp.status, address: host.address()}
	if resp.status >= 500 && resp.status < 600 {
		r := errorResponse("status " + strconv.Itoa(resp.status))
		r.http = answered
		return r
	}
	r := &response{status: statusOK}
	if resp.status != http.StatusOK {
		r = &response{status: statusDenied, httpStatus: resp.status, body: string(rbody)}
	}
	r.http = answered
	for k, vs := range resp.header {
		name := strings.ToLower(k)
		if name == headersToRemoveHeader {
			if r.status == statusOK {
				for _, v := range vs {
					for n := range strings.SplitSeq(v, ",") {
						if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
							r.headersToRemove = append(r.headersToRemove, n)
						}
					}
				}
			}
			continue
		}
		for _, v := range vs {
			c.sortHeader(r, name, v)
			if c.toMetadata.match(name) {
				// Each matching header a string field named after it,
				// the last value winning, as Envoy's HTTP client.
				if r.dynamicMetadata == nil {
					r.dynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
				}
				r.dynamicMetadata.Fields[name] = structpb.NewStringValue(v)
			}
		}
	}
	return r
}

// sortHeader files one response header of the service where
// authorization_response says it goes.
func (c *httpClient) sortHeader(r *response, name, value string) {
	if r.status == statusOK {
		if c.upstream.match(name) {
			r.requestHeaders = append(r.requestHeaders, headerEdit{name: name, value: value, action: actionSet})
		}
		if c.upstreamAppend.match(name) {
			r.requestHeaders = append(r.requestHeaders, headerEdit{name: name, value: value, action: actionAdd})
		}
		if c.clientOnSuccess.match(name) {
			r.responseHeaders = append(r.responseHeaders, headerEdit{name: name, value: value, action: actionAdd})
		}
		return
	}
	// The framing of the reply is the proxy's own.
	if name == "content-length" || name == "transfer-encoding" || name == "connection" {
		return
	}
	if (c.clientAll && name != "host") || c.client.match(name) {
		r.localHeaders = append(r.localHeaders, headerEdit{name: name, value: value, action: actionSet})
	}
}

// Close implements checker: idle connections to the service close.
func (c *httpClient) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

// httpAllowedHeaders selects the request headers an HTTP service gets, as
// Envoy's FilterConfig does: authorization_request.allowed_headers, else
// the filter's allowed_headers (not both), plus the ones Envoy always
// sends.
func httpAllowedHeaders(p *extauthzv3.ExtAuthz) (matchers, error) {
	//lint:ignore SA1019 Envoy still reads the deprecated allowed_headers (the loader warns).
	list, path := p.GetHttpService().GetAuthorizationRequest().GetAllowedHeaders(), "http_service.authorization_request.allowed_headers"
	if p.GetAllowedHeaders() != nil {
		if list != nil {
			// Envoy's words.
			return nil, errors.New("allowed_headers: invalid duplicate configuration for allowed_headers (also in http_service.authorization_request)")
		}
		list, path = p.GetAllowedHeaders(), "allowed_headers"
	}
	ms := matchers{exactName("authorization"), exactName(":method"), exactName(":path"), exactName(":authority")}
	more, err := compileMatchers(list, path)
	if err != nil {
		return nil, err
	}
	return append(ms, more...), nil
}

// formattedHeader is one authorization_request.headers_to_add entry.
type formattedHeader struct {
	name, value string
	// format renders the value per request when it has command
	// operators (Envoy's header formatter, as in a route's
	// request_headers_to_add).
	format *accesslog.Formatter
}

// renderHeaders renders the headers_to_add values with operators from
// the stream's entry: index i holds entry i's value ("" for literals).
// Rendering happens on the stream's goroutine, before the check runs on
// its own.
func (c *httpClient) renderHeaders(e *accesslog.Entry) []string {
	var out []string
	for i, h := range c.headersToAdd {
		if h.format == nil {
			continue
		}
		if out == nil {
			out = make([]string, len(c.headersToAdd))
		}
		out[i] = string(h.format.AppendValue(nil, e))
	}
	return out
}
