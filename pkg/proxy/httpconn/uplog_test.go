package httpconn

import (
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// upstreamLogFormat is the upstream logs' line in these tests.
const upstreamLogFormat = "%ACCESS_LOG_TYPE% %RESPONSE_CODE% %RESPONSE_FLAGS% %UPSTREAM_HOST% n=%UPSTREAM_REQUEST_ATTEMPT_COUNT% d=%RESPONSE_CODE_DETAILS% %PROTOCOL% tx=%BYTES_SENT% rx=%BYTES_RECEIVED% route=%ROUTE_NAME%\n"

// upstreamLogLine matches an upstreamLogFormat line.
var upstreamLogLine = regexp.MustCompile(`(?m)^(\S+) (\d+) (\S+) (\S+) n=(\d+) d=(\S+) (\S+) tx=(\d+) rx=(\d+) route=(\S+)$`)

// fileLog is a file access log with format, and filter when not nil.
func fileLog(format string, filter *accesslogv3.AccessLogFilter) *accesslogv3.AccessLog {
	tc := typed(&filev3.FileAccessLog{Path: "out", AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
		Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
			Specifier: &corev3.DataSource_InlineString{InlineString: format},
		}},
	}}})
	return &accesslogv3.AccessLog{Name: "envoy.access_loggers.file", Filter: filter, ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: tc}}
}

// uplogHCM is a connection manager over rc whose router has the upstream
// log u, and a downstream access log of the same format.
func uplogHCM(rc *routev3.RouteConfiguration, u *routerv3.Router) *hcmv3.HttpConnectionManager {
	cfg := hcm(rc)
	cfg.HttpFilters = []*hcmv3.HttpFilter{filter("envoy.filters.http.router", u)}
	cfg.AccessLog = []*accesslogv3.AccessLog{fileLog(upstreamLogFormat, nil)}
	return cfg
}

// upstreamLogLines are the log's lines, each split in upstreamLogLine's
// groups.
func upstreamLogLines(out *syncBuffer) [][]string {
	return upstreamLogLine.FindAllStringSubmatch(out.String(), -1)
}

// retried5xxRoute is the route r1 to the cluster up, retrying 5xx once.
func retried5xxRoute() *routev3.Route {
	route := clusterRoute("/", "up", func(a *routev3.RouteAction) {
		a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx"}
	})
	route.Name = "r1"
	return route
}

// waitLines waits for n log lines.
func waitLines(t *testing.T, out *syncBuffer, n int) [][]string {
	t.Helper()
	eventually(t, fmt.Sprintf("%d log lines in:\n%s", n, out.String()), func() bool { return len(upstreamLogLines(out)) >= n })
	return upstreamLogLines(out)
}

// A request retried once (503, then 200) logs one upstream entry per
// attempt, each with its own response code, then the downstream entry;
// with flush_upstream_log_on_upstream_stream, each attempt logs once it
// has its connection too (nothing sent yet). Over both upstream
// protocols; under -race, the HTTP/2 transport's reading of the body
// does not meet the entries.
func TestUpstreamLogRetry(t *testing.T) {
	up := failOnceUpstream(t)
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			st := stats.NewStore()
			fc := newFakeCluster(st, "up", h2, hostOf(up))
			t.Cleanup(fc.closeIdle)
			route := retried5xxRoute()
			out := &syncBuffer{}
			cfg := uplogHCM(routeConfig(route), &routerv3.Router{
				UpstreamLog:        []*accesslogv3.AccessLog{fileLog(upstreamLogFormat, nil)},
				UpstreamLogOptions: &routerv3.Router_UpstreamAccessLogOptions{FlushUpstreamLogOnUpstreamStream: true},
			})
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, AccessLogs: logTo(out)})
			status, _, body := do(t, client(), "POST", p.url(fmt.Sprintf("/retry-%v", h2)), strings.NewReader("hello"), nil)
			if status != 200 || body != "hello" {
				t.Fatalf("got %d %q", status, body)
			}
			lines := waitLines(t, out, 5)
			proto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2]
			want := []string{
				"UpstreamPoolReady 0 - " + hostOf(up) + " n=0 d=- " + proto + " tx=0 rx=0 route=r1",
				"UpstreamEnd 503 - " + hostOf(up) + " n=0 d=- " + proto + " tx=5 rx=0 route=r1",
				"UpstreamPoolReady 0 - " + hostOf(up) + " n=0 d=- " + proto + " tx=0 rx=0 route=r1",
				"UpstreamEnd 200 - " + hostOf(up) + " n=0 d=- " + proto + " tx=5 rx=5 route=r1",
				"DownstreamEnd 200 - " + hostOf(up) + " n=2 d=via_upstream HTTP/1.1 tx=5 rx=5 route=r1",
			}
			var got []string
			for _, l := range lines {
				got = append(got, l[0])
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// An attempt whose connection fails logs code 0 and UF, whether it is
// retried (the flag is the attempt's own) or answered.
func TestUpstreamLogConnectFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	st := stats.NewStore()
	fc := newFakeCluster(st, "up", false, dead)
	route := clusterRoute("/", "up", func(a *routev3.RouteAction) {
		a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "connect-failure", NumRetries: wrapperspb.UInt32(1)}
	})
	route.Name = "r1"
	out := &syncBuffer{}
	cfg := uplogHCM(routeConfig(route), &routerv3.Router{UpstreamLog: []*accesslogv3.AccessLog{fileLog(upstreamLogFormat, nil)}})
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, AccessLogs: logTo(out)})
	status, _, _ := do(t, client(), "GET", p.url("/x"), nil, nil)
	if status != 503 {
		t.Fatalf("status %d", status)
	}
	lines := waitLines(t, out, 3)
	for i, want := range []string{"UpstreamEnd 0 UF " + dead, "UpstreamEnd 0 UF " + dead, "DownstreamEnd 503 UF,URX " + dead} {
		if !strings.HasPrefix(lines[i][0], want+" ") {
			t.Errorf("line %d: %q, want %q...", i, lines[i][0], want)
		}
	}
}

// The upstream logs' filters see the attempt: a status_code_filter keeps
// the retried 503 and leaves out the 200.
func TestUpstreamLogFilter(t *testing.T) {
	up := failOnceUpstream(t)
	st := stats.NewStore()
	fc := newFakeCluster(st, "up", false, hostOf(up))
	t.Cleanup(fc.closeIdle)
	route := retried5xxRoute()
	out := &syncBuffer{}
	ge500 := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{StatusCodeFilter: &accesslogv3.StatusCodeFilter{
		Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_GE, Value: &corev3.RuntimeUInt32{DefaultValue: 500, RuntimeKey: "uplog.min"}},
	}}}
	cfg := uplogHCM(routeConfig(route), &routerv3.Router{UpstreamLog: []*accesslogv3.AccessLog{fileLog(upstreamLogFormat, ge500)}})
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, AccessLogs: logTo(out)})
	if status, _, _ := do(t, client(), "GET", p.url("/f"), nil, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	lines := waitLines(t, out, 2)
	if len(lines) != 2 || lines[0][1] != "UpstreamEnd" || lines[0][2] != "503" || lines[1][1] != "DownstreamEnd" {
		t.Errorf("log:\n%s", out.String())
	}
}

// upstream_log_flush_interval logs an attempt periodically while it runs:
// before its head with code 0, after it with the upstream's code. Under
// -race, the timer reads only what the stream published.
func TestUpstreamLogPeriodic(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			up := streamingUpstream(t, h2, 8, 40*time.Millisecond)
			st := stats.NewStore()
			fc := newFakeCluster(st, "up", h2, hostOf(up))
			route := clusterRoute("/", "up")
			route.Name = "r1"
			out := &syncBuffer{}
			cfg := uplogHCM(routeConfig(route), &routerv3.Router{
				UpstreamLog:        []*accesslogv3.AccessLog{fileLog(upstreamLogFormat, nil)},
				UpstreamLogOptions: &routerv3.Router_UpstreamAccessLogOptions{UpstreamLogFlushInterval: durationpb.New(20 * time.Millisecond)},
			})
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, AccessLogs: logTo(out)})
			status, _, body := do(t, client(), "GET", p.url("/stream"), nil, nil)
			if status != 200 || len(body) != 80 {
				t.Fatalf("status %d, body %q", status, body)
			}
			waitEndEntry(t, out)
			lines := upstreamLogLines(out)
			periodic := 0
			for _, l := range lines[:len(lines)-2] {
				if l[1] != "UpstreamPeriodic" || l[2] != "200" && l[2] != "0" {
					t.Errorf("entry %q before the end", l[0])
				}
				periodic++
			}
			if periodic == 0 || !strings.Contains(out.String(), "UpstreamPeriodic 200 ") {
				t.Errorf("no periodic entry after the head:\n%s", out.String())
			}
			if end := lines[len(lines)-2]; end[1] != "UpstreamEnd" || end[2] != "200" || end[9] != "80" {
				t.Errorf("end entry %q", end[0])
			}
			n := len(upstreamLogLines(out))
			time.Sleep(60 * time.Millisecond)
			if len(upstreamLogLines(out)) != n {
				t.Errorf("entries after the end:\n%s", out.String())
			}
		})
	}
}

// Without upstream_log the manager has no upstream loggers, so that the
// attempts' hooks cost a nil check; a bad upstream logger is refused
// with its path; an upgrade's own router may not have upstream logs.
func TestUpstreamLogConfig(t *testing.T) {
	m, err := New(hcm(routeConfig(clusterRoute("/", "up"))), Deps{Stats: stats.NewStore(), Extensions: builtin.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if m.uplog != nil {
		t.Error("uplog set without upstream_log")
	}
	bad := fileLog("%NOPE%", nil)
	cfg := uplogHCM(routeConfig(clusterRoute("/", "up")), &routerv3.Router{UpstreamLog: []*accesslogv3.AccessLog{bad}})
	_, err = New(cfg, Deps{Stats: stats.NewStore(), Extensions: builtin.Registry(), AccessLogs: logTo(io.Discard)})
	if err == nil || !strings.HasPrefix(err.Error(), "http_filters[0].typed_config.upstream_log[0]") {
		t.Errorf("bad logger: %v", err)
	}
	cfg = hcm(routeConfig(clusterRoute("/", "up")))
	cfg.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{
		UpgradeType: "websocket",
		Filters:     []*hcmv3.HttpFilter{filter("envoy.filters.http.router", &routerv3.Router{UpstreamLog: []*accesslogv3.AccessLog{fileLog("x\n", nil)}})},
	}}
	_, err = New(cfg, Deps{Stats: stats.NewStore(), Extensions: builtin.Registry(), AccessLogs: logTo(io.Discard)})
	if want := "upgrade_configs[0].filters[0].typed_config.upstream_log: not supported by Outrigger in an upgrade's filter chain"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("upgrade chain: %v, want %q", err, want)
	}
}

// A hedged request logs each attempt of the race once, with its own
// host: the slow one reset without a response, the fast one's 200.
func TestUpstreamLogHedge(t *testing.T) {
	log := &eventLog{}
	st := stats.NewStore()
	fc := slowFastCluster(t, log, st, false)
	out := &syncBuffer{}
	route := hedgeRoute(1, true)
	route.Name = "r1"
	cfg := uplogHCM(routeConfig(route), &routerv3.Router{UpstreamLog: []*accesslogv3.AccessLog{fileLog(upstreamLogFormat, nil)}})
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, AccessLogs: logTo(out)})
	status, _, body := do(t, client(), "POST", p.url("/x"), strings.NewReader("req"), nil)
	if status != 200 || body != "fast:req" {
		t.Fatalf("%d %q", status, body)
	}
	lines := waitLines(t, out, 3)
	slow, fast := fc.hosts[0].Address, fc.hosts[1].Address
	ends := map[string]string{}
	for _, l := range lines {
		if l[1] == "UpstreamEnd" {
			ends[l[4]] += l[2]
		}
	}
	if len(ends) != 2 || ends[slow] != "0" || ends[fast] != "200" {
		t.Errorf("UpstreamEnd codes by host %v (slow %s, fast %s):\n%s", ends, slow, fast, out.String())
	}
}
