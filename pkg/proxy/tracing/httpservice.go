package tracing

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// CompileHTTPService checks an HttpService (an OTLP/HTTP exporter's) and
// returns the poster of its requests and a name of its target for logs:
// http_uri's uri (its host is the :authority, its path the request path,
// defaultPath when it has none), cluster (found with cluster) and timeout
// (each request's), and request_headers_to_add. Errors name the field
// below the HttpService.
func CompileHTTPService(hs *corev3.HttpService, cluster func(name string) grpcservice.Cluster, defaultPath string) (*Poster, string, error) {
	if len(hs.GetFormatters()) > 0 {
		return nil, "", errors.New("formatters: not supported by Outrigger")
	}
	hu := hs.GetHttpUri()
	if hu.GetCluster() == "" {
		return nil, "", errors.New("http_uri.cluster: must be set")
	}
	timeout := hu.GetTimeout().AsDuration()
	if hu.GetTimeout() != nil && (hu.GetTimeout().CheckValid() != nil || timeout < 0) {
		return nil, "", errors.New("http_uri.timeout: must be a valid, non-negative duration")
	}
	u, err := url.Parse(hu.GetUri())
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("http_uri.uri: %q is not an absolute URI", hu.GetUri())
	}
	path := u.EscapedPath()
	if path == "" {
		path = defaultPath
	}
	headers, err := HeadersToAdd(hs.GetRequestHeadersToAdd())
	if err != nil {
		return nil, "", err
	}
	var cl grpcservice.Cluster
	if cluster != nil {
		cl = cluster(hu.GetCluster())
	}
	if cl == nil {
		return nil, "", fmt.Errorf("http_uri.cluster: unknown cluster '%s'", hu.GetCluster())
	}
	p, err := NewPoster(cl, u.Host, path, headers, timeout)
	if err != nil {
		return nil, "", fmt.Errorf("http_uri.uri: %w", err)
	}
	return p, "cluster " + hu.GetCluster(), nil
}

// HeadersToAdd reads an HttpService's request_headers_to_add: each
// header's key and value, added as they are. Errors name the field below
// the HttpService.
func HeadersToAdd(opts []*corev3.HeaderValueOption) (http.Header, error) {
	headers := http.Header{}
	for i, o := range opts {
		k := o.GetHeader().GetKey()
		if k == "" {
			return nil, fmt.Errorf("request_headers_to_add[%d].header.key: must be set", i)
		}
		if o.GetKeepEmptyValue() || o.GetAppendAction() != corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD {
			return nil, fmt.Errorf("request_headers_to_add[%d]: only header is supported by Outrigger", i)
		}
		//lint:ignore SA1019 append is Envoy's deprecated field, still accepted.
		if o.GetAppend() != nil {
			return nil, fmt.Errorf("request_headers_to_add[%d].append: not supported by Outrigger", i)
		}
		v, err := router.HeaderValueText(o.GetHeader())
		if err != nil {
			return nil, fmt.Errorf("request_headers_to_add[%d].header.%w", i, err)
		}
		headers.Add(k, v)
	}
	return headers, nil
}
