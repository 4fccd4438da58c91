package httpconn

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestUpstreamConnTracedOnlyWhenRead: an HTTP/2 upstream request carries
// the connection trace only when an access logger, or a format of its
// route, may show the upstream connection; whichever asks for it sees the
// connection's real local address, whether the access log, a route's
// response header, or both read it.
func TestUpstreamConnTracedOnlyWhenRead(t *testing.T) {
	up := h2cUpstream(t)
	for _, tc := range []struct {
		name              string
		logFormat         string // "" for no access log
		headerFormat      string // a response header of the /hdr route
		wantManagerReads  bool
		wantLogged, wantH bool
	}{
		{"no access log", "", "", false, false, false},
		{"access log without the connection", "%UPSTREAM_HOST% %RESPONSE_CODE%\n", "", false, false, false},
		{"access log with the local address", "la=%UPSTREAM_LOCAL_ADDRESS%\n", "", true, true, false},
		{"access log with upstream TLS", "v=%UPSTREAM_TLS_VERSION% la=%UPSTREAM_LOCAL_ADDRESS%\n", "", true, true, false},
		{"route header with the local address", "%UPSTREAM_HOST%\n", "%UPSTREAM_LOCAL_ADDRESS%", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			fc := newFakeCluster(st, "h2", true, hostOf(up))
			t.Cleanup(fc.closeIdle)
			route := clusterRoute("/", "h2")
			if tc.headerFormat != "" {
				route.ResponseHeadersToAdd = []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-up-local", Value: tc.headerFormat}}}
			}
			cfg := hcm(routeConfig(route))
			logs := &syncBuffer{}
			if tc.logFormat != "" {
				cfg.AccessLog = []*accesslogv3.AccessLog{{Name: "envoy.access_loggers.file", ConfigType: &accesslogv3.AccessLog_TypedConfig{
					TypedConfig: typed(&filev3.FileAccessLog{Path: "log", AccessLogFormat: &filev3.FileAccessLog_LogFormat{
						LogFormat: &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{
							TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: tc.logFormat}},
						}},
					}}),
				}}}
			}
			open := func(accesslog.Destination, string) (io.Writer, error) { return logs, nil }
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"h2": fc}, AccessLogs: accesslog.SinkContext{Open: open}})
			if p.m.upConn != tc.wantManagerReads {
				t.Fatalf("manager reads the upstream connection: %v, want %v", p.m.upConn, tc.wantManagerReads)
			}
			code, hdr, _ := do(t, client(), "GET", p.url("/x"), nil, nil)
			if code != 200 {
				t.Fatalf("status %d", code)
			}
			p.waitCounter(t, "http.test.downstream_rq_completed", 1)
			local := hdr.Get("x-up-local")
			if tc.wantH != isLoopbackAddr(local) {
				t.Fatalf("x-up-local %q", local)
			}
			line := logs.String()
			// The line is written when the stream ends, which may follow
			// the completed-request counter.
			for deadline := time.Now().Add(5 * time.Second); tc.logFormat != "" && line == "" && time.Now().Before(deadline); line = logs.String() {
				time.Sleep(5 * time.Millisecond)
			}
			_, logged, _ := strings.Cut(strings.TrimSpace(line), "la=")
			if tc.wantLogged != isLoopbackAddr(logged) {
				t.Fatalf("access log %q", line)
			}
		})
	}
}

// isLoopbackAddr reports whether s is a 127.0.0.1 "ip:port" with a port.
func isLoopbackAddr(s string) bool {
	host, port, err := net.SplitHostPort(s)
	return err == nil && host == "127.0.0.1" && port != "" && port != "0"
}
