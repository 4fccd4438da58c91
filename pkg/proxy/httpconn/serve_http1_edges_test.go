package httpconn

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"golang.org/x/net/http2"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// lateBy is how much later than its setting a timeout may be seen to
// fire: the scheduling of a loaded 2-core machine (the proxy's goroutine,
// then the test's), not the proxy's own lateness, which is none for the
// exact timeouts and negative (up to slackOf early) for the lazy ones.
const lateBy = 350 * time.Millisecond

// clientLag is how much earlier than the client sees it a timer may start
// at the proxy: when it counts from an event the client only notices
// after reading (a flushed response, a GOAWAY).
const clientLag = 150 * time.Millisecond

// firedOnTime fails the test unless elapsed, measured by the client from
// before the event the timeout counts from, lies within
// [setting - early, setting + lateBy].
func firedOnTime(t *testing.T, what string, elapsed, setting, early time.Duration) {
	t.Helper()
	late := elapsed > setting+lateBy
	if late {
		// Lateness says something about the proxy only when this process
		// gets the CPU when it asks: on a starved machine (other test
		// packages, benchmarks) a goroutine's wake-up alone can take
		// longer than lateBy. Early firing is always an error.
		if lag := schedulingLag(); lag > starvedLag {
			t.Logf("%s fired after %v (want %v +%v), on a machine where a 1 ms sleep takes up to %v: lateness not judged",
				what, elapsed.Round(time.Millisecond), setting, lateBy, lag.Round(time.Millisecond))
			late = false
		}
	}
	if elapsed < setting-early || late {
		t.Errorf("%s fired after %v; want %v (-%v, +%v)", what, elapsed.Round(time.Millisecond), setting, early, lateBy)
	}
}

// starvedLag is the oversleep of a 1 ms sleep past which the machine is
// taken for starved of CPU.
const starvedLag = 20 * time.Millisecond

// schedulingLag is the longest oversleep of twenty 1 ms sleeps: how late
// this process's goroutines wake right now.
func schedulingLag() time.Duration {
	var worst time.Duration
	for range 20 {
		start := time.Now()
		time.Sleep(time.Millisecond)
		if over := time.Since(start) - time.Millisecond; over > worst {
			worst = over
		}
	}
	return worst
}

// closedAt waits until the proxy closes c and returns when, or fails the
// test when it sends anything or stays open past testTimeout.
func (c *rawConn) closedAt() time.Time {
	c.t.Helper()
	b, err := c.r.ReadByte()
	if err == nil {
		c.t.Fatalf("read %q where the connection should close", b)
	}
	return time.Now()
}

// ms is a duration in milliseconds, for configurations.
func ms(n int) *durationpb.Duration { return durationpb.New(time.Duration(n) * time.Millisecond) }

// slowUpstream answers every request after wait: the head, then after
// bodyWait the 2-byte body.
func slowUpstream(t *testing.T, wait, bodyWait time.Duration) string {
	return rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		for {
			if readRequestHead(r) == "" {
				return
			}
			time.Sleep(wait)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"); err != nil {
				return
			}
			time.Sleep(bodyWait)
			if _, err := io.WriteString(c, "ok"); err != nil {
				return
			}
		}
	})
}

// timingProxy serves /d directly and /x and /slow through upstreams: /x
// reads request bodies forever, /slow answers after upWait (head) and
// upBodyWait (body).
func timingProxy(t *testing.T, edit func(*hcmv3.HttpConnectionManager), upWait, upBodyWait time.Duration) *proxy {
	t.Helper()
	cfg := hcm(routeConfig(directRoute("/d", 200, "hi"), clusterRoute("/x", "x"), clusterRoute("/slow", "slow")))
	if edit != nil {
		edit(cfg)
	}
	sink := rawUpstream(t, func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) })
	st := stats.NewStore()
	ups := fakeUpstreams{
		"x":    newFakeCluster(st, "x", false, sink),
		"slow": newFakeCluster(st, "slow", false, slowUpstream(t, upWait, upBodyWait)),
	}
	return startProxy(t, cfg, Deps{Upstreams: ups})
}

// TestTimeoutsFireOnTime checks that each HTTP/1 timeout fires at its
// setting, within lateBy, never earlier than its slack allows, whatever
// deadlines busy connections kept lazily before.
func TestTimeoutsFireOnTime(t *testing.T) {
	const setting = 400 * time.Millisecond
	idle := func(codec hcmv3.HttpConnectionManager_CodecType) func(*hcmv3.HttpConnectionManager) {
		return func(c *hcmv3.HttpConnectionManager) {
			c.CodecType = codec
			c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: ms(400)}
		}
	}
	tests := map[string]struct {
		edit func(*hcmv3.HttpConnectionManager)
		// run drives the client and returns when the event the timeout
		// counts from happened, and when it was seen to fire.
		run func(t *testing.T, c *rawConn, start time.Time) (from, fired time.Time)
		// early is how early the timeout may fire (lazily kept ones).
		early   time.Duration
		counter string
	}{
		// Before the fix, an AUTO listener waited for the HTTP/2
		// preface for the idle timeout, then as long again for a
		// request: 2x the setting.
		"idle timeout, no request, AUTO codec": {
			edit: idle(hcmv3.HttpConnectionManager_AUTO),
			run: func(t *testing.T, c *rawConn, start time.Time) (time.Time, time.Time) {
				return start, c.closedAt()
			},
			counter: "http.test.downstream_cx_idle_timeout",
		},
		"idle timeout, no request, HTTP1 codec": {
			edit: idle(hcmv3.HttpConnectionManager_HTTP1),
			run: func(t *testing.T, c *rawConn, start time.Time) (time.Time, time.Time) {
				return start, c.closedAt()
			},
			counter: "http.test.downstream_cx_idle_timeout",
		},
		"idle timeout after a busy stretch": {
			edit: idle(hcmv3.HttpConnectionManager_AUTO),
			run: func(t *testing.T, c *rawConn, _ time.Time) (time.Time, time.Time) {
				// Requests every 30 ms for 600 ms: the deadlines of
				// the waits between them are kept lazily.
				var last time.Time
				for range 20 {
					c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
					c.response("GET")
					last = time.Now()
					time.Sleep(30 * time.Millisecond)
				}
				return last, c.closedAt()
			},
			// The timer counts from the proxy's end of the last
			// response, which is before the client has read it (last):
			// by a loaded machine's scheduling delay, it may look early.
			early:   25 * time.Millisecond,
			counter: "http.test.downstream_cx_idle_timeout",
		},
		"request headers timeout": {
			edit: func(c *hcmv3.HttpConnectionManager) { c.RequestHeadersTimeout = ms(400) },
			run: func(t *testing.T, c *rawConn, _ time.Time) (time.Time, time.Time) {
				from := time.Now()
				c.send("GET /d HTTP/1.1\r\nHost:")
				resp, body := c.response("GET")
				if resp.StatusCode != 408 || body != bodyHeaderTimeout {
					t.Errorf("got %d %q, want 408 %q", resp.StatusCode, body, bodyHeaderTimeout)
				}
				return from, time.Now()
			},
			counter: "http.test.downstream_rq_header_timeout",
		},
		"stream idle timeout on a head": {
			edit: func(c *hcmv3.HttpConnectionManager) { c.StreamIdleTimeout = ms(400) },
			run: func(t *testing.T, c *rawConn, _ time.Time) (time.Time, time.Time) {
				from := time.Now()
				c.send("GET /d HTTP/1.1\r\n")
				resp, body := c.response("GET")
				if resp.StatusCode != 408 || body != bodyStreamTimeout {
					t.Errorf("got %d %q, want 408 %q", resp.StatusCode, body, bodyStreamTimeout)
				}
				return from, time.Now()
			},
			early:   slackOf(setting),
			counter: "http.test.downstream_rq_idle_timeout",
		},
		"stream idle timeout on a body that stops": {
			edit: func(c *hcmv3.HttpConnectionManager) { c.StreamIdleTimeout = ms(400) },
			run: func(t *testing.T, c *rawConn, _ time.Time) (time.Time, time.Time) {
				c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n")
				var from time.Time
				for range 5 {
					time.Sleep(60 * time.Millisecond)
					from = time.Now()
					c.send("a")
				}
				resp, body := c.response("POST")
				if resp.StatusCode != 408 || body != bodyStreamTimeout {
					t.Errorf("got %d %q, want 408 %q", resp.StatusCode, body, bodyStreamTimeout)
				}
				return from, time.Now()
			},
			early:   slackOf(setting),
			counter: "http.test.downstream_rq_idle_timeout",
		},
		// A body trickling in keeps the stream idle timeout away; the
		// request timeout still fires at its setting, and is not taken
		// for the stream idle timeout by a deadline kept lazily.
		"request timeout on a trickled body": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.RequestTimeout = ms(400)
				// As long as the request timeout allows, so that only a
				// writer stalled that long by a loaded machine can be
				// taken for idle.
				c.StreamIdleTimeout = ms(350)
			},
			run: func(t *testing.T, c *rawConn, _ time.Time) (time.Time, time.Time) {
				from := time.Now()
				c.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n")
				done := make(chan struct{})
				go func() {
					for {
						select {
						case <-done:
							return
						case <-time.After(20 * time.Millisecond):
							_, _ = c.Write([]byte("a"))
						}
					}
				}()
				resp, body := c.response("POST")
				close(done)
				if resp.StatusCode != 408 || body != bodyRequestTimeout {
					t.Errorf("got %d %q, want 408 %q", resp.StatusCode, body, bodyRequestTimeout)
				}
				return from, time.Now()
			},
			counter: "http.test.downstream_rq_timeout",
		},
		"max_connection_duration on an idle connection": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxConnectionDuration: ms(400)}
			},
			run: func(t *testing.T, c *rawConn, start time.Time) (time.Time, time.Time) {
				c.send("GET /d HTTP/1.1\r\nHost: h\r\n\r\n")
				if resp, _ := c.response("GET"); resp.Close {
					t.Error("the first response closes the connection")
				}
				return start, c.closedAt()
			},
			counter: "http.test.downstream_cx_max_duration_reached",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := timingProxy(t, tc.edit, 0, 0)
			start := time.Now()
			c := dialRaw(t, p.addr)
			from, fired := tc.run(t, c, start)
			firedOnTime(t, name, fired.Sub(from), setting, tc.early)
			p.waitCounter(t, tc.counter, 1)
		})
	}
}

// TestMaxConnectionDurationInFlight checks that a connection whose
// maximum duration passes during a request ends with that request's
// response: announced by Connection: close when its head has not left yet.
func TestMaxConnectionDurationInFlight(t *testing.T) {
	tests := map[string]struct {
		upWait, upBodyWait time.Duration
		wantClose          bool // the response says Connection: close
	}{
		"before the response head": {upWait: 600 * time.Millisecond, wantClose: true},
		"after the response head":  {upWait: 50 * time.Millisecond, upBodyWait: 600 * time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := timingProxy(t, func(c *hcmv3.HttpConnectionManager) {
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxConnectionDuration: ms(300)}
				c.DelayedCloseTimeout = ms(200)
			}, tc.upWait, tc.upBodyWait)
			c := dialRaw(t, p.addr)
			c.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
			resp, body := c.response("GET")
			if resp.StatusCode != 200 || body != "ok" || resp.Close != tc.wantClose {
				t.Fatalf("got %d %q close=%v, want 200 \"ok\" close=%v", resp.StatusCode, body, resp.Close, tc.wantClose)
			}
			done := time.Now()
			// The connection ends after the response, after the
			// delayed close since this client does not close. The
			// delay started when the proxy flushed the response, a
			// little before the client had read it: hence the early
			// allowance.
			firedOnTime(t, "close after the last response", c.closedAt().Sub(done), 200*time.Millisecond, clientLag)
			p.waitCounter(t, "http.test.downstream_cx_max_duration_reached", 1)
			p.waitCounter(t, "http.test.downstream_cx_delayed_close_timeout", 1)
		})
	}
}

func TestMaxConnectionDurationZeroRefused(t *testing.T) {
	cfg := hcm(routeConfig(directRoute("/d", 200, "hi")))
	cfg.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxConnectionDuration: ms(0)}
	_, err := New(cfg, Deps{Stats: stats.NewStore(), Extensions: builtin.Registry()})
	want := "common_http_protocol_options.max_connection_duration: 0s would close every connection at once; leave it unset for no maximum"
	if err == nil || err.Error() != want {
		t.Fatalf("New: %v, want %q", err, want)
	}
}

// TestDelayedClose checks the close that follows a response ending the
// connection: it waits for the client to close, up to
// delayed_close_timeout.
func TestDelayedClose(t *testing.T) {
	const wait = 300 * time.Millisecond
	closeReq := "GET /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	tests := map[string]struct {
		timeout *durationpb.Duration
		send    string
		// clientCloses: the client closes as soon as it has the
		// response.
		clientCloses bool
		status       int
		// wantAfter is when the proxy closes after the response.
		wantAfter   time.Duration
		wantCounter uint64 // downstream_cx_delayed_close_timeout
		wantRemote  uint64 // downstream_cx_destroy_remote
	}{
		"client does not close": {
			timeout: ms(300), send: closeReq, status: 200, wantAfter: wait, wantCounter: 1,
		},
		"client closes first": {
			timeout: ms(300), send: closeReq, status: 200, clientCloses: true, wantRemote: 1,
		},
		"disabled": {
			timeout: ms(0), send: closeReq, status: 200,
		},
		"after a protocol error": {
			timeout: ms(300), send: "\x16\x03\x01\x02\x00", status: 400, wantAfter: wait, wantCounter: 1,
		},
		"after max_requests_per_connection": {
			timeout: ms(300), send: "GET /d HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, wantAfter: wait, wantCounter: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
				c.DelayedCloseTimeout = tc.timeout
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxRequestsPerConnection: wrapperspb.UInt32(1)}
			})
			c := dialRaw(t, p.addr)
			// The delay counts from the response's flush, after this.
			sent := time.Now()
			c.send(tc.send)
			resp, _ := c.response("GET")
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("got %d close=%v, want %d and Connection: close", resp.StatusCode, resp.Close, tc.status)
			}
			if tc.clientCloses {
				_ = c.Close()
			} else {
				firedOnTime(t, "the proxy's close", c.closedAt().Sub(sent), tc.wantAfter, 0)
			}
			p.waitCounter(t, "http.test.downstream_cx_destroy", 1)
			if n := p.counter("http.test.downstream_cx_delayed_close_timeout"); n != tc.wantCounter {
				t.Errorf("downstream_cx_delayed_close_timeout = %d, want %d", n, tc.wantCounter)
			}
			if n := p.counter("http.test.downstream_cx_destroy_remote"); n != tc.wantRemote {
				t.Errorf("downstream_cx_destroy_remote = %d, want %d", n, tc.wantRemote)
			}
		})
	}
}

// TestDelayedCloseOfAnUnframedBody checks that a body whose end is the
// connection's end (to an HTTP/1.0 client, without a length) ends at once,
// although the socket waits for the client to close.
func TestDelayedCloseOfAnUnframedBody(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
	})
	cfg := hcm(routeConfig(clusterRoute("/", "up")))
	cfg.DelayedCloseTimeout = ms(5000)
	cfg.HttpProtocolOptions = &corev3.Http1ProtocolOptions{AcceptHttp_10: true}
	p := startProxy(t, cfg, Deps{Upstreams: fakeUpstreams{"up": newFakeCluster(stats.NewStore(), "up", false, up)}})
	c := dialRaw(t, p.addr)
	start := time.Now()
	c.send("GET / HTTP/1.0\r\nHost: h\r\n\r\n")
	resp, body := c.response("GET")
	if resp.StatusCode != 200 || body != "hi" {
		t.Fatalf("got %d %q, want 200 \"hi\"", resp.StatusCode, body)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the body took %v to end: its end waited for the delayed close", d)
	}
}

// TestDelayedCloseEndsAtShutdown checks that a connection waiting for its
// client to close does not hold Manager.Close up.
func TestDelayedCloseEndsAtShutdown(t *testing.T) {
	p := directProxy(t, func(c *hcmv3.HttpConnectionManager) { c.DelayedCloseTimeout = ms(10000) })
	c := dialRaw(t, p.addr)
	c.send("GET /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	c.response("GET")
	// Let the connection reach its wait.
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	_ = p.m.Close()
	c.closedAt()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close ended the delayed close after %v", d)
	}
	if n := p.counter("http.test.downstream_cx_delayed_close_timeout"); n != 0 {
		t.Errorf("downstream_cx_delayed_close_timeout = %d, want 0 (the shutdown ended the wait)", n)
	}
}

// TestEarlyBadRequest sends bytes that cannot start a request and expects
// Envoy's answer at once, long before any timeout: 400 Bad Request,
// Connection: close, downstream_cx_protocol_error, and an access-log line
// with DPE and http1.codec_error. Every case gets the same answer, which
// testdata/early400.golden holds.
func TestEarlyBadRequest(t *testing.T) {
	inputs := map[string]string{
		"tls_client_hello": "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
		"binary":           "\x00\x01\x02\x03",
		"space_first":      " GET / HTTP/1.1\r\n",
		"bad_method_byte":  "GE\x7fT / HTTP/1.1",
	}
	codecs := map[string]hcmv3.HttpConnectionManager_CodecType{
		"auto":  hcmv3.HttpConnectionManager_AUTO,
		"http1": hcmv3.HttpConnectionManager_HTTP1,
	}
	dateRE := regexp.MustCompile(`(?m)^date: .*\r$`)
	for name, in := range inputs {
		for cname, codec := range codecs {
			t.Run(name+"/"+cname, func(t *testing.T) {
				log := &syncBuffer{}
				cfg := hcm(routeConfig(directRoute("/d", 200, "hi")))
				cfg.CodecType = codec
				cfg.DelayedCloseTimeout = ms(0)
				cfg.RequestHeadersTimeout = ms(9000)
				cfg.AccessLog = []*accesslogv3.AccessLog{{
					Name: "envoy.access_loggers.file",
					ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(&filev3.FileAccessLog{
						Path: "log",
						AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
							Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
								Specifier: &corev3.DataSource_InlineString{InlineString: "%PROTOCOL% %REQ(:METHOD)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n"},
							}},
						}},
					})},
				}}
				p := startProxy(t, cfg, Deps{AccessLogs: accesslog.SinkContext{Open: func(accesslog.Destination, string) (io.Writer, error) { return log, nil }}})
				c := dialRaw(t, p.addr)
				start := time.Now()
				c.send(in)
				raw, err := io.ReadAll(c.r)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("answered after %v: the proxy waited for more bytes", d)
				}
				p.waitCounter(t, "http.test.downstream_cx_protocol_error", 1)
				p.waitCounter(t, "http.test.downstream_rq_4xx", 1)
				out := dateRE.ReplaceAllString(string(raw), "date: <date>\r") + "--- access log\n" + log.String()
				golden.Check(t, filepath.Join("testdata", "early400.golden"), []byte(out))
			})
		}
	}
}

// TestEarlyCheckKeepsHTTP2 checks that the method check does not stand in
// the way of the HTTP/2 preface on an AUTO listener, however it arrives.
func TestEarlyCheckKeepsHTTP2(t *testing.T) {
	for _, step := range []int{1, 3, len(h2Preface)} {
		t.Run(fmt.Sprintf("preface in pieces of %d", step), func(t *testing.T) {
			p := directProxy(t, nil)
			c := dialRaw(t, p.addr)
			for i := 0; i < len(h2Preface); i += step {
				c.send(h2Preface[i:min(i+step, len(h2Preface))])
				time.Sleep(5 * time.Millisecond)
			}
			// The server's first frame is its SETTINGS.
			var fh [9]byte
			if _, err := io.ReadFull(c.r, fh[:]); err != nil {
				t.Fatalf("reading the first frame: %v", err)
			}
			if fh[3] != 0x4 {
				t.Fatalf("first frame of type %#x, want SETTINGS (0x4)", fh[3])
			}
			p.waitCounter(t, "http.test.downstream_cx_http2_total", 1)
		})
	}
}

// TestMaxConnectionDurationHTTP2 checks max_connection_duration on an
// HTTP/2 connection: the drain sequence at the setting (a GOAWAY that
// refuses nothing, the final one drain_timeout later), then the close once
// its streams are done.
func TestMaxConnectionDurationHTTP2(t *testing.T) {
	p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
		c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxConnectionDuration: ms(400)}
		c.DrainTimeout = ms(200)
	})
	start := time.Now()
	c := dialH2(t, p.addr)
	c.wantOK(c.get("/d"), "hi")
	c.wantGoAway(http2.ErrCodeNo)
	firedOnTime(t, "the first GOAWAY", time.Since(start), 400*time.Millisecond, 0)
	c.until("the final GOAWAY", func() bool { return len(c.goAways) == 2 })
	firedOnTime(t, "the final GOAWAY", time.Since(start), 600*time.Millisecond, 0)
	if first, last := c.goAways[0].lastStreamID, c.goAways[1].lastStreamID; first != 1<<31-1 || last != 1 {
		t.Errorf("GOAWAYs name streams %d then %d, want 2^31-1 then 1", first, last)
	}
	_ = c.waitClosed()
	p.waitCounter(t, "http.test.downstream_cx_max_duration_reached", 1)
}

// TestSlowUploadOutlivesUpstreamTimers checks that a request body trickling
// in for longer than the route timeout and the stream idle timeout, but
// never idle for long, reaches the upstream: the route timeout runs from
// the request's end, and the upstream's idle deadline moves with the body.
func TestSlowUploadOutlivesUpstreamTimers(t *testing.T) {
	const size = 16
	up := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		readRequestHead(r)
		if _, err := io.ReadFull(r, make([]byte, size)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngot!")
	})
	// The timers are 500 ms, the body takes 960 ms: a byte may come up to
	// 440 ms late on a loaded machine before the test would fail.
	cfg := hcm(routeConfig(clusterRoute("/", "up", withTimeout(500*time.Millisecond))))
	cfg.StreamIdleTimeout = ms(500)
	p := startProxy(t, cfg, Deps{Upstreams: fakeUpstreams{"up": newFakeCluster(stats.NewStore(), "up", false, up)}})
	c := dialRaw(t, p.addr)
	c.send(fmt.Sprintf("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", size))
	for range size {
		// 16 x 60 ms: 960 ms in all, 60 ms without a byte.
		time.Sleep(60 * time.Millisecond)
		c.send("a")
	}
	resp, body := c.response("POST")
	if resp.StatusCode != 200 || body != "got!" {
		t.Fatalf("got %d %q, want the upstream's 200 \"got!\"", resp.StatusCode, body)
	}
}
