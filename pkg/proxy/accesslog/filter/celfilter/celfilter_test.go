package celfilter

import (
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
)

// headers is a header map of lower-case names.
type headers map[string]string

func (h headers) Get(name string) (string, bool) { v, ok := h[name]; return v, ok }

func compile(t *testing.T, expr string, cfg *corev3.CelExpressionConfig) filter.Filter {
	t.Helper()
	f, err := Factory{}.Compile(&celv3.ExpressionFilter{Expression: expr, CelConfig: cfg})
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return f
}

func entry() *accesslog.Entry {
	return &accesslog.Entry{
		StartTime: time.Unix(1700000000, 0), Method: "GET", Path: "/v1beta3/items?x=1", Authority: "shop", Scheme: "http",
		Protocol:       "HTTP/1.1",
		RequestHeaders: headers{"x-log": "true", "user-agent": "curl/8"}, ResponseHeaders: headers{"content-type": "text/plain"},
		ResponseCode: 503, ResponseCodeDetails: "upstream_reset_before_response_started", ResponseFlags: accesslog.UpstreamConnectionFailure,
		Duration: 1500 * time.Millisecond, DownstreamRemoteAddress: "10.1.2.3:40000", DownstreamLocalAddress: "127.0.0.1:8080",
		UpstreamHost: "127.0.0.2:9000", UpstreamCluster: "backend", RouteName: "r1", ConnectionID: 7,
	}
}

func TestExpressions(t *testing.T) {
	e := entry()
	for expr, want := range map[string]bool{
		"response.code >= 400":                                          true,
		"response.code >= 400 && response.code < 500":                   false,
		"request.headers['x-log'] == 'true'":                            true,
		"request.url_path.contains('v1beta3')":                          true,
		"request.method == 'POST'":                                      false,
		"request.host == 'shop' && request.protocol == 'HTTP/1.1'":      true,
		"response.code_details.startsWith('upstream_reset')":            true,
		"response.flags == 32":                                          true, // UF is bit 5, as in Envoy
		"source.address == '10.1.2.3:40000' && source.port == 40000":    true,
		"destination.port == 8080":                                      true,
		"upstream.address == '127.0.0.2:9000' && upstream.port == 9000": true,
		"xds.cluster_name == 'backend' && xds.route_name == 'r1'":       true,
		"connection.id == 7":                                            true,
		"request.duration > duration('1s')":                             true,
		"response.headers['content-type'] == 'text/plain'":              true,
		// No TLS: connection.mtls is absent, an error, so not logged.
		"connection.mtls || true": true, // || short-circuits the error
		"connection.mtls":         false,
		// Errors and non-booleans do not log.
		"request.headers['missing'] == 'x'": false,
		"filter_state['x'] == 'y'":          false,
		"response.code":                     false,
		"response.grpc_status == 0":         false, // absent without grpc-status
	} {
		if got := compile(t, expr, nil).Match(e); got != want {
			t.Errorf("%s: %v, want %v", expr, got, want)
		}
	}
	e.ResponseTrailers = headers{"grpc-status": "14"}
	if !compile(t, "response.grpc_status == 14", nil).Match(e) {
		t.Error("grpc_status from the trailers")
	}
}

func TestCompileErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":                      "expression: must be set",
		"response.code >=":      "expression: ",
		"nosuchfunction(1)":     "expression: ",
		"string(response.code)": "expression: ", // string() needs enable_string_conversion
	} {
		_, err := Factory{}.Compile(&celv3.ExpressionFilter{Expression: expr})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v, want prefix %q", expr, err, want)
		}
	}
	f := compile(t, "string(response.code) == '503'", &corev3.CelExpressionConfig{EnableStringConversion: true})
	if !f.Match(entry()) {
		t.Error("string() with enable_string_conversion")
	}
}

func TestConcurrentMatches(t *testing.T) {
	f := compile(t, "response.code == 503 && request.headers['x-log'] == 'true'", nil)
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for range 500 {
				ok = ok && f.Match(entry())
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a concurrent match failed")
		}
	}
}
