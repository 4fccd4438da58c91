package httpconn

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// deprecatedHCM is a connection manager with the deprecated top-level
// access-log fields set, and opts.
func deprecatedHCM(interval *durationpb.Duration, onNewRequest bool, opts *hcmv3.HttpConnectionManager_HcmAccessLogOptions) *hcmv3.HttpConnectionManager {
	//lint:ignore SA1019 Envoy still honours the deprecated fields; the test checks Outrigger does too.
	return &hcmv3.HttpConnectionManager{AccessLogFlushInterval: interval, FlushAccessLogOnNewRequest: onNewRequest, AccessLogOptions: opts}
}

func TestReadLogOptions(t *testing.T) {
	ms := func(n int64) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Millisecond) }
	cases := map[string]struct {
		cfg     *hcmv3.HttpConnectionManager
		want    logOptions
		wantErr string
	}{
		"unset": {cfg: &hcmv3.HttpConnectionManager{}},
		"options": {
			cfg: &hcmv3.HttpConnectionManager{AccessLogOptions: &hcmv3.HttpConnectionManager_HcmAccessLogOptions{
				AccessLogFlushInterval: ms(250), FlushAccessLogOnNewRequest: true, FlushLogOnTunnelSuccessfullyEstablished: true,
			}},
			want: logOptions{flushInterval: 250 * time.Millisecond, onNewRequest: true, onTunnel: true},
		},
		"deprecated fields": {
			cfg:  deprecatedHCM(ms(1), true, nil),
			want: logOptions{flushInterval: time.Millisecond, onNewRequest: true},
		},
		"both new-request flags": {
			cfg:     deprecatedHCM(nil, true, &hcmv3.HttpConnectionManager_HcmAccessLogOptions{}),
			wantErr: "flush_access_log_on_new_request: only one of flush_access_log_on_new_request or access_log_options can be specified",
		},
		"both intervals": {
			cfg:     deprecatedHCM(ms(10), false, &hcmv3.HttpConnectionManager_HcmAccessLogOptions{AccessLogFlushInterval: ms(10)}),
			wantErr: "access_log_flush_interval: only one of access_log_flush_interval or access_log_options can be specified",
		},
		"interval under 1ms": {
			cfg: &hcmv3.HttpConnectionManager{AccessLogOptions: &hcmv3.HttpConnectionManager_HcmAccessLogOptions{
				AccessLogFlushInterval: durationpb.New(500 * time.Microsecond)}},
			wantErr: "access_log_options.access_log_flush_interval: must be at least 1ms, got 500µs",
		},
		"deprecated interval negative": {
			cfg:     deprecatedHCM(&durationpb.Duration{Seconds: -1}, false, nil),
			wantErr: "access_log_flush_interval: must not be negative, got -1s",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := readLogOptions(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// streamingUpstream reads the request body as it comes and, meanwhile,
// answers 200 with n pieces of 10 bytes, one every gap: both directions
// move at once, as in a bidirectional gRPC stream.
func streamingUpstream(t *testing.T, http2 bool, n int, gap time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		go func() { _, _ = io.Copy(io.Discard, r.Body) }()
		if !http2 {
			_ = http.NewResponseController(w).EnableFullDuplex()
		}
		fl := w.(http.Flusher)
		for i := range n {
			_, _ = fmt.Fprintf(w, "piece %03d\n", i)
			fl.Flush()
			time.Sleep(gap)
		}
	}))
	if http2 {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// optionsLog is an access log whose lines optionsLine matches.
func optionsLog() []*accesslogv3.AccessLog {
	tc := typed(&filev3.FileAccessLog{Path: "out", AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
		Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
			Specifier: &corev3.DataSource_InlineString{InlineString: "%ACCESS_LOG_TYPE% %RESPONSE_CODE% rx=%BYTES_RECEIVED% tx=%BYTES_SENT%\n"},
		}},
	}}})
	return []*accesslogv3.AccessLog{{Name: "envoy.access_loggers.file", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: tc}}}
}

// logTo has every access log write to out.
func logTo(out io.Writer) accesslog.SinkContext {
	return accesslog.SinkContext{Open: func(accesslog.Destination, string) (io.Writer, error) { return out, nil }}
}

var optionsLine = regexp.MustCompile(`(?m)^(\S+) (\d+) rx=(\d+) tx=(\d+)$`)

// TestAccessLogOptionsStreams logs a request body and a response body that
// move at once, over HTTP/1.1 and HTTP/2 both ways: the start entry, the
// periodic ones with growing counts, the end one with the totals. Run with
// -race, it checks that the periodic entries, logged from their timer's
// goroutine, read nothing the stream's goroutines write.
func TestAccessLogOptionsStreams(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			up := streamingUpstream(t, h2, 8, 40*time.Millisecond)
			st := stats.NewStore()
			cl := newFakeCluster(st, "up", h2, hostOf(up))
			out := &syncBuffer{}
			cfg := hcm(routeConfig(clusterRoute("/", "up")))
			cfg.AccessLogOptions = &hcmv3.HttpConnectionManager_HcmAccessLogOptions{
				AccessLogFlushInterval: durationpb.New(20 * time.Millisecond), FlushAccessLogOnNewRequest: true,
			}
			cfg.AccessLog = optionsLog()
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": cl}, AccessLogs: logTo(out)})

			pr, pw := io.Pipe()
			go func() {
				for range 8 {
					_, _ = io.WriteString(pw, "0123456789")
					time.Sleep(30 * time.Millisecond)
				}
				_ = pw.Close()
			}()
			c := client()
			if h2 {
				c = h2cClient()
			}
			status, _, body := do(t, c, http.MethodPost, p.url("/stream"), pr, nil)
			if status != 200 || len(body) != 80 {
				t.Fatalf("status %d, body %q", status, body)
			}
			waitEndEntry(t, out)
			lines := optionsLine.FindAllStringSubmatch(out.String(), -1)
			if len(lines) < 4 {
				t.Fatalf("want a start, periodic and end entries, got:\n%s", out.String())
			}
			if first := lines[0]; first[1] != "DownstreamStart" || first[2] != "0" || first[4] != "0" {
				t.Errorf("first entry %q, want the start with no response", first[0])
			}
			if last := lines[len(lines)-1]; last[1] != "DownstreamEnd" || last[2] != "200" || last[3] != "80" || last[4] != "80" {
				t.Errorf("last entry %q, want the end with the totals", last[0])
			}
			var prevRx, prevTx int
			for _, l := range lines[1 : len(lines)-1] {
				rx, _ := strconv.Atoi(l[3])
				tx, _ := strconv.Atoi(l[4])
				if l[1] != "DownstreamPeriodic" || rx < prevRx || tx < prevTx || rx > 80 || tx > 80 {
					t.Errorf("periodic entry %q after rx=%d tx=%d:\n%s", l[0], prevRx, prevTx, out.String())
				}
				prevRx, prevTx = rx, tx
			}
			if !strings.Contains(out.String(), "DownstreamPeriodic 200 ") {
				t.Errorf("no periodic entry after the response head:\n%s", out.String())
			}
		})
	}
}

// TestAccessLogOptionsTunnel logs a WebSocket tunnel: once established,
// then its bytes, counted by the tunnel's two goroutines, every interval,
// then its end; under -race, the periodic entries' timer reads only what
// the stream published.
func TestAccessLogOptionsTunnel(t *testing.T) {
	up := switchingUpstream(t, make(chan string, 1))
	st := stats.NewStore()
	out := &syncBuffer{}
	cfg := hcm(routeConfig(clusterRoute("/", "ws")))
	cfg.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket"}}
	cfg.AccessLogOptions = &hcmv3.HttpConnectionManager_HcmAccessLogOptions{
		AccessLogFlushInterval: durationpb.New(10 * time.Millisecond), FlushLogOnTunnelSuccessfullyEstablished: true,
	}
	cfg.AccessLog = optionsLog()
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"ws": newFakeCluster(st, "ws", false, up)}, AccessLogs: logTo(out)})
	c := dialRaw(t, p.addr)
	c.send(upgradeRequest("/chat"))
	if head, err := readHead(c.r); err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Fatalf("head %q, %v", head, err)
	}
	got := make([]byte, 5)
	for i := range 5 {
		c.send("hello")
		if _, err := io.ReadFull(c.r, got); err != nil || string(got) != "HELLO" {
			t.Fatalf("echo %q %v", got, err)
		}
		if i == 0 {
			// The open tunnel's bytes must show in a periodic entry: wait
			// for one rather than sleep, so a slow machine cannot skip it.
			eventually(t, "a periodic entry with the first echo's bytes", func() bool {
				return strings.Contains(out.String(), "DownstreamPeriodic 101 rx=5 tx=5")
			})
		}
	}
	_ = c.Close()
	waitEndEntry(t, out)
	lines := optionsLine.FindAllStringSubmatch(out.String(), -1)
	if len(lines) < 3 || lines[0][0] != "DownstreamTunnelSuccessfullyEstablished 101 rx=0 tx=0" {
		t.Fatalf("want the tunnel's entry first, then periodic ones; got:\n%s", out.String())
	}
	if last := lines[len(lines)-1]; last[0] != "DownstreamEnd 101 rx=25 tx=25" {
		t.Errorf("last entry %q, want the end with the totals", last[0])
	}
	var moved bool
	for _, l := range lines[1 : len(lines)-1] {
		if l[1] != "DownstreamPeriodic" || l[2] != "101" {
			t.Errorf("entry %q, want periodic ones of the 101 until the end", l[0])
		}
		moved = moved || (l[3] != "0" && l[3] != "25")
	}
	if !moved {
		t.Errorf("no periodic entry shows the tunnel's bytes while it is open:\n%s", out.String())
	}
}

// waitEndEntry waits for the stream's final entry: the stream counts
// itself completed before it writes that entry, so a loaded machine can
// show the counter, and even one more periodic entry, before it.
func waitEndEntry(t *testing.T, out *syncBuffer) {
	t.Helper()
	eventually(t, "the DownstreamEnd entry", func() bool { return strings.Contains(out.String(), "DownstreamEnd") })
}
