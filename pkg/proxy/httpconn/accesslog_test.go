package httpconn

import (
	"bytes"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// syncBuffer is an access-log writer the test reads back.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAccessLog(t *testing.T) {
	custom := "%PROTOCOL% %REQ(:METHOD)% %REQ(:AUTHORITY)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% -> %REQ(:PATH)% " +
		"%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% rx=%BYTES_RECEIVED% tx=%BYTES_SENT% " +
		"%UPSTREAM_CLUSTER% %UPSTREAM_HOST% route=%ROUTE_NAME% id=%REQ(X-REQUEST-ID)% ct=%RESP(CONTENT-TYPE)%\n"
	jsonFormat, err := structpb.NewStruct(map[string]any{
		"code": "%RESPONSE_CODE%", "path": "%REQ(:PATH)%", "flags": "%RESPONSE_FLAGS%", "start": "%START_TIME%",
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]*syncBuffer{"default": {}, "custom": {}, "json": {}}
	open := func(_ accesslog.Destination, path string) (io.Writer, error) { return logs[path], nil }
	accessLog := func(path string, f *filev3.FileAccessLog) *accesslogv3.AccessLog {
		f.Path = path
		return &accesslogv3.AccessLog{Name: "envoy.access_loggers.file", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(f)}}
	}
	up := echoUpstream(t)
	st := stats.NewStore()
	cl := newFakeCluster(st, "echo", false, hostOf(up))
	cfg := hcm(routeConfig(
		directRoute("/direct", 200, "hello"),
		clusterRoute("/rewrite/", "echo", func(a *routev3.RouteAction) { a.PrefixRewrite = "/" }),
		clusterRoute("/echo", "echo"),
	))
	cfg.AccessLog = []*accesslogv3.AccessLog{
		accessLog("default", &filev3.FileAccessLog{}),
		accessLog("custom", &filev3.FileAccessLog{AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
				Specifier: &corev3.DataSource_InlineString{InlineString: custom},
			}},
		}}}),
		accessLog("json", &filev3.FileAccessLog{AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: jsonFormat},
		}}}),
	}
	start := time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)
	p := startProxy(t, cfg, Deps{
		Stats: st, Upstreams: fakeUpstreams{"echo": cl}, AccessLogs: accesslog.SinkContext{Open: open},
		Now: func() time.Time { return start },
	})
	c := dialRaw(t, p.addr)
	requests := []string{
		"GET /direct HTTP/1.1\r\nHost: example.com\r\nUser-Agent: ua/1\r\nX-Request-Id: id-1\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: example.com\r\nX-Request-Id: id-2\r\nContent-Length: 5\r\n\r\nhello",
		"GET /rewrite/a?b HTTP/1.1\r\nHost: example.com\r\nX-Request-Id: id-3\r\n\r\n",
		"GET /missing HTTP/1.1\r\nHost: example.com\r\nX-Request-Id: id-4\r\n\r\n",
	}
	for _, r := range requests {
		c.send(r)
		c.response("GET")
	}
	p.waitCounter(t, "http.test.downstream_rq_completed", uint64(len(requests)))
	upAddr := hostOf(up)
	for name, buf := range logs {
		got := strings.ReplaceAll(buf.String(), upAddr, "<upstream>")
		// The echoed body's length depends on the upstream's port.
		golden.Check(t, filepath.Join("testdata", "accesslog", name+".golden"), []byte(stableBytes(got)))
	}
}

// stableBytes blanks the bytes-sent figure of echoed responses, whose
// length varies with the ports in them, and the upstream service time of
// the default format, which is real time even on the test clock.
func stableBytes(s string) string {
	var out []string
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.Contains(line, "echo") {
			if i := strings.Index(line, " tx="); i >= 0 {
				j := strings.IndexByte(line[i+1:], ' ')
				line = line[:i] + " tx=<n>" + line[i+1+j:]
			}
		}
		line = defaultServiceTime.ReplaceAllString(line, "${1}<ms>")
		out = append(out, line)
	}
	return strings.Join(out, "")
}

// defaultServiceTime matches the default format up to its
// %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% field, when that has a value.
var defaultServiceTime = regexp.MustCompile(`^(\[[^\]]*\] "[^"]*" \d+ \S+ \d+ \d+ \d+ )\d+`)
