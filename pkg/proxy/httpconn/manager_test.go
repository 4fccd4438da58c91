package httpconn

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	tracingtagsv3 "github.com/envoyproxy/go-control-plane/envoy/type/tracing/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// typed wraps a message as a typed_config.
func typed(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

// filter is an HTTP filter entry with a typed_config.
func filter(name string, m proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: typed(m)}}
}

func TestNewErrors(t *testing.T) {
	base := func(edit func(*hcmv3.HttpConnectionManager)) *hcmv3.HttpConnectionManager {
		c := hcm(routeConfig(directRoute("/", 200, "")))
		edit(c)
		return c
	}
	hc := filter("envoy.filters.http.health_check", &healthcheckv3.HealthCheck{PassThroughMode: wrapperspb.Bool(false)})
	tests := map[string]struct {
		cfg     *hcmv3.HttpConnectionManager
		open    func(accesslog.Destination, string) (io.Writer, error)
		wantErr string
	}{
		"no route config": {
			cfg:     base(func(c *hcmv3.HttpConnectionManager) { c.RouteSpecifier = nil }),
			wantErr: "route_specifier: an inline route_config is required",
		},
		"scoped routes": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.RouteSpecifier = &hcmv3.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmv3.ScopedRoutes{Name: "r"}}
			}),
			wantErr: "route_specifier: scoped_routes is not supported by Outrigger",
		},
		"http3 codec": {
			cfg:     base(func(c *hcmv3.HttpConnectionManager) { c.CodecType = hcmv3.HttpConnectionManager_HTTP3 }),
			wantErr: "codec_type: HTTP3 is not supported",
		},
		"bad route": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.GetRouteConfig().VirtualHosts[0].Routes[0].Action = nil
			}),
			wantErr: "route_config.virtual_hosts[0].routes[0]",
		},
		"router not last": {
			cfg:     base(func(c *hcmv3.HttpConnectionManager) { c.HttpFilters = append(c.HttpFilters, hc) }),
			wantErr: "http_filters[0]: the router filter is terminal and must be the last filter",
		},
		"health check last": {
			cfg:     base(func(c *hcmv3.HttpConnectionManager) { c.HttpFilters = []*hcmv3.HttpFilter{hc} }),
			wantErr: "http_filters[0]: the last filter must be the router",
		},
		"unknown filter": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.HttpFilters = append([]*hcmv3.HttpFilter{filter("x", &routev3.Route{})}, c.HttpFilters...)
			}),
			wantErr: "http_filters[0].typed_config: filter type envoy.config.route.v3.Route is not supported",
		},
		"filter without config": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "envoy.filters.http.no_such_filter"}}, c.HttpFilters...)
			}),
			wantErr: `http_filters[0].name: filter "envoy.filters.http.no_such_filter" without typed_config is not supported`,
		},
		"health check without mode": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.HttpFilters = append([]*hcmv3.HttpFilter{filter("hc", &healthcheckv3.HealthCheck{})}, c.HttpFilters...)
			}),
			wantErr: "http_filters[0].typed_config.pass_through_mode: must be set",
		},
		"access log without writer": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.AccessLog = []*accesslogv3.AccessLog{{ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(&filev3.FileAccessLog{Path: "/x"})}}}
			}),
			wantErr: "access_log[0].typed_config.path: access log files cannot be opened here",
		},
		"access log that cannot open": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.AccessLog = []*accesslogv3.AccessLog{{ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(&filev3.FileAccessLog{Path: "/x"})}}}
			}),
			open:    func(accesslog.Destination, string) (io.Writer, error) { return nil, errors.New("permission denied") },
			wantErr: "access_log[0].typed_config.path: permission denied",
		},
		"access log filter": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.AccessLog = []*accesslogv3.AccessLog{{
					Filter:     &accesslogv3.AccessLogFilter{},
					ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(&filev3.FileAccessLog{Path: "/x"})},
				}}
			}),
			wantErr: "access_log[0].filter.filter_specifier: one filter is required",
		},
		"bad access log format": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.AccessLog = []*accesslogv3.AccessLog{{ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(&filev3.FileAccessLog{
					Path: "/x", AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
						Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
							Specifier: &corev3.DataSource_InlineString{InlineString: "%NOT_AN_OPERATOR%"},
						}},
					}},
				})}}}
			}),
			open:    func(accesslog.Destination, string) (io.Writer, error) { return io.Discard, nil },
			wantErr: "access_log[0].typed_config.log_format",
		},
		"bad tracing operation": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.Tracing = &hcmv3.HttpConnectionManager_Tracing{Operation: "op %NOPE%"}
			}),
			wantErr: "tracing.operation: at offset 3: command operator %NOPE% is not supported by Outrigger",
		},
		"bad tracing upstream operation": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.Tracing = &hcmv3.HttpConnectionManager_Tracing{UpstreamOperation: "%REQ()%"}
			}),
			wantErr: "tracing.upstream_operation: at offset 0: %REQ()%: empty header name",
		},
		"metadata tag without a key": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.Tracing = &hcmv3.HttpConnectionManager_Tracing{CustomTags: []*tracingtagsv3.CustomTag{{Tag: "t", Type: &tracingtagsv3.CustomTag_Metadata_{
					Metadata: &tracingtagsv3.CustomTag_Metadata{Kind: &metadatav3.MetadataKind{Kind: &metadatav3.MetadataKind_Route_{Route: &metadatav3.MetadataKind_Route{}}}},
				}}}}
			}),
			wantErr: "tracing.custom_tags[0].metadata.metadata_key.key: must be set",
		},
		"negative timeout": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.StreamIdleTimeout = &durationpb.Duration{Seconds: -1}
			}),
			wantErr: "stream_idle_timeout: must not be negative",
		},
		"default host without http/1.0": {
			cfg: base(func(c *hcmv3.HttpConnectionManager) {
				c.HttpProtocolOptions = &corev3.Http1ProtocolOptions{DefaultHostForHttp_10: "h"}
			}),
			wantErr: "http_protocol_options.default_host_for_http_10: needs accept_http_10",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.cfg, Deps{Log: logr.Discard(), Stats: stats.NewStore(), AccessLogs: accesslog.SinkContext{Open: tc.open}, Extensions: builtin.Registry()})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewNeedsStats(t *testing.T) {
	if _, err := New(hcm(routeConfig()), Deps{}); err == nil {
		t.Fatal("New without a stats store succeeded")
	}
}

func TestFilterNamesWithoutConfig(t *testing.T) {
	for _, name := range []string{"envoy.filters.http.router", "proxy.filters.http.router"} {
		cfg := hcm(routeConfig(directRoute("/", 200, "")))
		cfg.HttpFilters = []*hcmv3.HttpFilter{{Name: name}}
		if _, err := New(cfg, Deps{Stats: stats.NewStore(), Extensions: builtin.Registry()}); err != nil {
			t.Errorf("router named %q without typed_config: %v", name, err)
		}
	}
}

// TestClose checks the graceful stop: idle connections close at once, a
// request in flight completes with Connection: close, and new connections
// are refused.
func TestClose(t *testing.T) {
	release := make(chan struct{})
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		<-release
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
	})
	st := stats.NewStore()
	cl := newFakeCluster(st, "held", false, addr)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "held"))), Deps{Stats: st, Upstreams: fakeUpstreams{"held": cl}})
	idle := dialRaw(t, p.addr)
	busy := dialRaw(t, p.addr)
	busy.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	eventually(t, "two connections and a request in flight", func() bool {
		return p.gauge("http.test.downstream_cx_active") == 2 && p.gauge("http.test.downstream_rq_active") == 1
	})
	if err := p.m.Close(); err != nil {
		t.Fatal(err)
	}
	if !idle.closed() {
		t.Error("idle connection still open after Close")
	}
	close(release)
	resp, body := busy.response("GET")
	if resp.StatusCode != 200 || body != "done" || !resp.Close {
		t.Errorf("in-flight request: %d %q close=%v, want 200 \"done\" and close", resp.StatusCode, body, resp.Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := p.m.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := p.m.ActiveConnections(); n != 0 {
		t.Errorf("ActiveConnections = %d after Shutdown", n)
	}
	late := dialRaw(t, p.addr)
	late.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	if !late.closed() {
		t.Error("a connection accepted after Close was served")
	}
}

// TestShutdownCutsStragglers checks that Shutdown does not wait past its
// context for a request that does not end.
func TestShutdownCutsStragglers(t *testing.T) {
	addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.Copy(io.Discard, r)
	})
	st := stats.NewStore()
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "stuck"))),
		Deps{Stats: st, Upstreams: fakeUpstreams{"stuck": newFakeCluster(st, "stuck", false, addr)}})
	c := dialRaw(t, p.addr)
	c.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	eventually(t, "a request in flight", func() bool { return p.gauge("http.test.downstream_rq_active") == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.m.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the context's deadline error", err)
	}
	if !c.closed() {
		t.Error("the straggling connection is still open")
	}
}
