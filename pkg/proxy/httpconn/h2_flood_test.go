package httpconn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The flood tests play the attacks Envoy's HTTP/2 limits exist for, with
// hand-built frames, and check that the connection ends with GOAWAY
// ENHANCE_YOUR_CALM, that the limit's stat counts it, and that the proxy
// did no work it should not have.

// floodProxy is a proxy whose every route goes to a counting HTTP/1.1
// upstream.
type floodProxy struct {
	*proxy
	requests    atomic.Int64 // requests the upstream received
	connections atomic.Int64 // connections the upstream accepted
}

// startFloodProxy starts a floodProxy; edits change its HTTP/2 options.
func startFloodProxy(t *testing.T, rt RuntimeValues, edit func(*corev3.Http2ProtocolOptions)) *floodProxy {
	t.Helper()
	f := &floodProxy{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.URL.Path == "/big" {
			_, _ = w.Write(make([]byte, 4<<20))
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.connections.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	st := stats.NewStore()
	up := newFakeCluster(st, "up", false, hostOf(srv))
	t.Cleanup(up.closeIdle)
	cfg := hcm(routeConfig(clusterRoute("/", "up")))
	cfg.CodecType = hcmv3.HttpConnectionManager_HTTP2
	cfg.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{}
	if edit != nil {
		edit(cfg.Http2ProtocolOptions)
	}
	f.proxy = startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": up}, Runtime: rt})
	return f
}

// rawH2 is a client connection that has sent the preface and its SETTINGS
// and reads nothing until told to.
type rawH2 struct {
	t   *testing.T
	nc  net.Conn
	enc *hpack.Encoder
	buf bytes.Buffer
}

// dialFlood opens an h2c connection to p without reading the server's
// frames.
func dialFlood(t *testing.T, p *floodProxy) *rawH2 {
	t.Helper()
	c := &rawH2{t: t, nc: dialH2Raw(t, p.addr)}
	c.enc = hpack.NewEncoder(&c.buf)
	fr := http2.NewFramer(c.nc, nil)
	_ = c.nc.SetWriteDeadline(time.Now().Add(h2ReadTimeout))
	if _, err := io.WriteString(c.nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// frames serialises frames written by write into one buffer.
func frames(t *testing.T, write func(fr *http2.Framer)) []byte {
	t.Helper()
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.AllowIllegalWrites = true
	write(fr)
	return b.Bytes()
}

// requestBlock is the HPACK block of a GET for path.
func (c *rawH2) requestBlock(path string) []byte {
	c.buf.Reset()
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "example.com"}, {Name: ":path", Value: path},
	} {
		_ = c.enc.WriteField(f)
	}
	return bytes.Clone(c.buf.Bytes())
}

// flood writes chunk up to n times, in a goroutine, until a write fails
// (the server closed) or stop is closed; done is closed when it returns.
func (c *rawH2) flood(chunk []byte, n int) (stop func(), done <-chan struct{}) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range n {
			select {
			case <-quit:
				return
			default:
			}
			_ = c.nc.SetWriteDeadline(time.Now().Add(h2ReadTimeout))
			if _, err := c.nc.Write(chunk); err != nil {
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit) }) }, finished
}

// goAwayCode reads what the server sent until a GOAWAY, and returns its
// code; it fails the test if the connection ends or stays silent without
// one. Reading is bounded by the frames and the time it may take.
func (c *rawH2) goAwayCode() http2.ErrCode {
	c.t.Helper()
	fr := http2.NewFramer(nil, bufio.NewReaderSize(c.nc, 64<<10))
	deadline := time.Now().Add(h2ReadTimeout)
	for i := 0; i < 10_000_000; i++ {
		_ = c.nc.SetReadDeadline(deadline)
		f, err := fr.ReadFrame()
		if err != nil {
			c.t.Fatalf("no GOAWAY before the connection ended (%d frames read): %v", i, err)
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return g.ErrCode
		}
	}
	c.t.Fatal("no GOAWAY in 10 million frames")
	return 0
}

// closed waits until the server has closed the connection, reading and
// dropping what it still sends.
func (c *rawH2) closed() {
	c.t.Helper()
	// The client is done sending, so that the server's lingering close
	// need not wait.
	_ = c.nc.(*net.TCPConn).CloseWrite()
	_ = c.nc.SetReadDeadline(time.Now().Add(h2ReadTimeout))
	_, err := io.Copy(io.Discard, c.nc)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		c.t.Fatalf("the connection did not end: %v", err)
	}
}

// isReset reports whether err is the peer resetting the connection.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestH2OutboundControlFlood floods PINGs and SETTINGS without reading the
// acknowledgements: past max_outbound_control_frames waiting to be
// written, the connection ends with GOAWAY ENHANCE_YOUR_CALM (once the
// client reads again) and http2.outbound_control_flood counts it, so the
// queue never grows past the limit.
func TestH2OutboundControlFlood(t *testing.T) {
	tests := map[string][]byte{
		"PING": frames(t, func(fr *http2.Framer) {
			for range 1000 {
				_ = fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
			}
		}),
		"SETTINGS": frames(t, func(fr *http2.Framer) {
			for range 1000 {
				_ = fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0})
			}
		}),
	}
	for name, chunk := range tests {
		t.Run(name, func(t *testing.T) {
			p := startFloodProxy(t, nil, func(o *corev3.Http2ProtocolOptions) {
				o.MaxOutboundControlFrames = wrapperspb.UInt32(200)
			})
			c := dialFlood(t, p)
			stop, done := c.flood(chunk, 20_000)
			defer func() { stop(); <-done }()
			p.waitCounter(t, "http2.outbound_control_flood", 1)
			if code := c.goAwayCode(); code != http2.ErrCodeEnhanceYourCalm {
				t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
			}
			stop()
			c.closed()
			if got := p.counter("http2.outbound_flood"); got != 0 {
				t.Errorf("http2.outbound_flood = %d, want 0 (a control flood)", got)
			}
			p.waitGauge(t, "http2.outbound_control_frames_active", 0)
			p.waitGauge(t, "http.test.downstream_cx_active", 0)
		})
	}
}

// floodFrameLimit is TestH2OutboundFlood's max_outbound_frames: below the
// 64 full DATA frames (16 KiB each, the client's default
// SETTINGS_MAX_FRAME_SIZE) that fill the proxy's 1 MiB output bound.
const floodFrameLimit = 32

// TestH2OutboundFlood opens streams whose responses the client never
// reads, with windows wide open: past max_outbound_frames waiting to be
// written, the connection ends and http2.outbound_flood counts it.
//
// The limit must be one the proxy is sure to reach. Its output is bounded:
// streams stop adding DATA once 1 MiB is queued (TestH2OutputBounded), so
// what a client that never reads makes it hold is the write under way
// (any size, down to one frame when the writer keeps up) plus at least
// 1 MiB in frames of at most 16 KiB: 64 frames or more, once the 80 MiB
// of bodies have filled the sockets. A limit of 100 was crossed only when
// the write under way happened to hold 37 frames or more, which depends
// on scheduling (it failed now and then); 32 is crossed every time.
func TestH2OutboundFlood(t *testing.T) {
	p := startFloodProxy(t, nil, func(o *corev3.Http2ProtocolOptions) {
		o.MaxOutboundFrames = wrapperspb.UInt32(floodFrameLimit)
	})
	c := dialFlood(t, p)
	chunk := frames(t, func(fr *http2.Framer) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		_ = fr.WriteWindowUpdate(0, 1<<31-1-65535)
		for id := uint32(1); id < 40; id += 2 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.requestBlock("/big"), EndStream: true, EndHeaders: true})
		}
	})
	stop, done := c.flood(chunk, 1)
	<-done
	stop()
	p.waitCounter(t, "http2.outbound_flood", 1)
	if code := c.goAwayCode(); code != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
	}
	c.closed()
	p.waitGauge(t, "http2.pending_send_bytes", 0)
	p.waitGauge(t, "http2.outbound_frames_active", 0)
}

// TestH2OutputBounded opens streams with huge windows and never reads: the
// output queued for the connection stays near the per-connection buffer
// limit (the streams wait for the writer) instead of growing with what the
// upstream sends.
func TestH2OutputBounded(t *testing.T) {
	p := startFloodProxy(t, nil, nil)
	c := dialFlood(t, p)
	chunk := frames(t, func(fr *http2.Framer) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
		_ = fr.WriteWindowUpdate(0, 1<<31-1-65535)
		for id := uint32(1); id < 20; id += 2 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.requestBlock("/big"), EndStream: true, EndHeaders: true})
		}
	})
	_ = c.nc.SetWriteDeadline(time.Now().Add(h2ReadTimeout))
	if _, err := c.nc.Write(chunk); err != nil {
		t.Fatal(err)
	}
	p.waitCounter(t, "cluster.up.upstream_rq_total", 10)
	// Ten 4 MiB bodies are on their way; what the proxy holds for the
	// client is bounded by 1 MiB queued plus the write under way.
	h2 := p.m.h2CodecStats()
	for range 20 {
		time.Sleep(20 * time.Millisecond)
		if n := h2.pendingSendBytes.Value(); n > 3<<20 {
			t.Fatalf("http2.pending_send_bytes = %d: the output is not bounded", n)
		}
	}
	if p.counter("http2.outbound_flood") != 0 {
		t.Errorf("a client that reads slowly is not a flood")
	}
}

// TestH2InboundFloods sends frames that cost work and carry nothing, past
// each limit: the connection ends with GOAWAY ENHANCE_YOUR_CALM and the
// limit's stat counts it.
func TestH2InboundFloods(t *testing.T) {
	tests := map[string]struct {
		stat  string
		flood func(c *rawH2, fr *http2.Framer)
	}{
		"empty DATA frames": {
			stat: "http2.inbound_empty_frames_flood",
			flood: func(c *rawH2, fr *http2.Framer) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.requestBlock("/"), EndHeaders: true})
				for range 3 {
					_ = fr.WriteData(1, false, nil)
				}
			},
		},
		"empty CONTINUATION frames": {
			stat: "http2.inbound_empty_frames_flood",
			flood: func(c *rawH2, fr *http2.Framer) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.requestBlock("/")[:3]})
				for range 200_000 {
					_ = fr.WriteContinuation(1, false, nil)
				}
			},
		},
		"an endless header block": {
			stat: "http2.header_overflow",
			flood: func(c *rawH2, fr *http2.Framer) {
				block := c.requestBlock("/")
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block})
				// An indexed field, repeated: every byte decodes to
				// a header of 40 bytes or more.
				fill := bytes.Repeat([]byte{0x80 | 16}, 16384)
				for range 256 { // 4 MiB
					_ = fr.WriteContinuation(1, false, fill)
				}
			},
		},
		"PRIORITY frames": {
			stat: "http2.inbound_priority_frames_flood",
			flood: func(c *rawH2, fr *http2.Framer) {
				for range 300 {
					_ = fr.WritePriority(3, http2.PriorityParam{StreamDep: 0, Weight: 1})
				}
			},
		},
		"WINDOW_UPDATE frames": {
			stat: "http2.inbound_window_update_frames_flood",
			flood: func(c *rawH2, fr *http2.Framer) {
				for range 100 {
					_ = fr.WriteWindowUpdate(0, 1)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := startFloodProxy(t, nil, nil)
			c := dialFlood(t, p)
			chunk := frames(t, func(fr *http2.Framer) { tc.flood(c, fr) })
			stop, done := c.flood(chunk, 1)
			defer func() { stop(); <-done }()
			if code := c.goAwayCode(); code != http2.ErrCodeEnhanceYourCalm {
				t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
			}
			p.waitCounter(t, tc.stat, 1)
			c.closed()
			if got := p.counter("http.test.downstream_cx_protocol_error"); got != 0 {
				t.Errorf("downstream_cx_protocol_error = %d: a flood has a stat of its own", got)
			}
			if got := p.requests.Load(); got != 0 {
				t.Errorf("the upstream received %d requests", got)
			}
		})
	}
}

// TestH2LimitsWithinBounds checks that traffic just inside each limit is
// served: a lone empty DATA frame, PRIORITY frames up to the stream
// allowance, window updates for data received.
func TestH2LimitsWithinBounds(t *testing.T) {
	p := startFloodProxy(t, nil, nil)
	c := dialH2(t, p.addr)
	id := c.open(false, requestHead("POST", "/")...)
	c.send("an empty DATA frame", func() error { return c.fr.WriteData(id, false, nil) })
	for range 100 {
		c.send("PRIORITY", func() error { return c.fr.WritePriority(id, http2.PriorityParam{Weight: 1}) })
	}
	c.send("WINDOW_UPDATE", func() error { return c.fr.WriteWindowUpdate(0, 1) })
	c.sendData(id, []byte("body"), true)
	c.wantOK(id, "ok")
	c.wantOK(c.get("/"), "ok")
	for _, stat := range []string{"inbound_empty_frames_flood", "inbound_priority_frames_flood", "inbound_window_update_frames_flood"} {
		if got := p.counter("http2." + stat); got != 0 {
			t.Errorf("http2.%s = %d, want 0", stat, got)
		}
	}
}

// fixedRuntime is a runtime with fixed integer values.
type fixedRuntime map[string]uint64

func (r fixedRuntime) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

func (r fixedRuntime) Bool(key string, def bool) bool {
	if v, ok := r[key]; ok {
		return v != 0
	}
	return def
}

// TestH2RapidReset plays CVE-2023-44487: HEADERS and RST_STREAM pairs as
// fast as the client can send them. The connection ends with GOAWAY once
// half of overload.premature_reset_total_stream_count streams were reset
// early, downstream_rq_too_many_premature_resets counts it, and the
// upstream never sees one of the reset requests, nor a connection for them.
func TestH2RapidReset(t *testing.T) {
	tests := map[string]struct {
		rt    RuntimeValues
		pairs int // reset before the connection must close
	}{
		"Envoy's default limit": {rt: nil, pairs: 250},
		"a runtime limit":       {rt: fixedRuntime{prematureResetCountKey: 40}, pairs: 20},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := startFloodProxy(t, tc.rt, nil)
			c := dialFlood(t, p)
			block := c.requestBlock("/")
			chunk := frames(t, func(fr *http2.Framer) {
				for id := uint32(1); id < 2*20_000; id += 2 {
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
					_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
				}
			})
			stop, done := c.flood(chunk, 1)
			defer func() { stop(); <-done }()
			if code := c.goAwayCode(); code != http2.ErrCodeEnhanceYourCalm {
				t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
			}
			p.waitCounter(t, "http.test.downstream_rq_too_many_premature_resets", 1)
			c.closed()
			if got := p.counter("http.test.downstream_rq_rx_reset"); got < uint64(tc.pairs) || got > uint64(tc.pairs)+64 {
				t.Errorf("downstream_rq_rx_reset = %d, want about %d: the connection must end at the limit", got, tc.pairs)
			}
			if r, cx := p.requests.Load(), p.connections.Load(); r != 0 || cx != 0 {
				t.Errorf("the upstream saw %d requests on %d connections for reset streams", r, cx)
			}
		})
	}
}

// TestH2ResetsBelowTheLimit resets streams that were answered, and a few
// that were not: no premature-reset limit applies to them.
func TestH2ResetsBelowTheLimit(t *testing.T) {
	p := startFloodProxy(t, fixedRuntime{prematureResetCountKey: 10}, nil)
	c := dialH2(t, p.addr)
	for range 4 {
		id := c.get("/")
		c.send("RST_STREAM", func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	}
	for range 30 {
		id := c.get("/")
		c.wantOK(id, "ok")
		c.send("RST_STREAM after the response", func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	}
	c.wantOK(c.get("/"), "ok")
	if len(c.goAways) > 0 || p.counter("http.test.downstream_rq_too_many_premature_resets") != 0 {
		t.Fatalf("the connection was closed for %d early resets out of 35 streams", 4)
	}
}

// TestH2ResetCancelsUpstream resets a stream whose request reached the
// upstream: the upstream exchange stops at once.
func TestH2ResetCancelsUpstream(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	id := c.get("/slow")
	waitSignal(t, f.up.arrived, "the request at the upstream")
	start := time.Now()
	c.send("RST_STREAM", func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	waitSignal(t, f.up.cancelled, "the upstream request cancelled")
	if d := time.Since(start); d > time.Second {
		t.Errorf("the upstream request was cancelled %v after the reset", d)
	}
	c.wantOK(c.get("/direct"), "hello direct")
}

// waitGauge waits until a gauge of the proxy reaches want.
func (p *proxy) waitGauge(t testing.TB, name string, want int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s = %d", name, want), func() bool { return p.gauge(name) == want })
}

// FuzzH2Floods feeds a connection manager HTTP/2 frames in runs, as the
// floods send them: each pair of input bytes picks a frame kind and how
// many times to send it. Whatever the mix, the connection ends once the
// client is gone, without a panic or a hang, and with low limits that make
// the flood paths run often.
func FuzzH2Floods(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 255, 0, 255},          // PINGs
		{1, 40, 2, 3},             // SETTINGS, then empty DATA
		{5, 1, 6, 200, 3, 250},    // HEADERS, CONTINUATIONs, PRIORITY
		{5, 1, 7, 100, 4, 40},     // HEADERS and RST_STREAM pairs, WINDOW_UPDATEs
		{8, 1, 2, 1, 9, 10, 0, 1}, // a request with a body, malformed frames
	} {
		f.Add(seed)
	}
	st := stats.NewStore()
	cfg := hcm(routeConfig(directRoute("/", 200, "hi")))
	cfg.CodecType = hcmv3.HttpConnectionManager_HTTP2
	cfg.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{
		MaxOutboundFrames:        wrapperspb.UInt32(50),
		MaxOutboundControlFrames: wrapperspb.UInt32(20),
	}
	m, err := New(cfg, Deps{Log: logr.Discard(), Stats: st, Runtime: fixedRuntime{prematureResetCountKey: 20}, Extensions: builtin.Registry()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = m.Close() })
	var enc bytes.Buffer
	he := hpack.NewEncoder(&enc)
	for _, hf := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "h"}, {Name: ":path", Value: "/"}} {
		_ = he.WriteField(hf)
	}
	block := enc.Bytes()
	f.Fuzz(func(t *testing.T, data []byte) {
		var b bytes.Buffer
		b.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&b, nil)
		fr.AllowIllegalWrites = true
		_ = fr.WriteSettings()
		id := uint32(1)
		for i := 0; i+1 < len(data) && b.Len() < 1<<20; i += 2 {
			for range int(data[i+1]) {
				switch data[i] % 10 {
				case 0:
					_ = fr.WritePing(false, [8]byte{})
				case 1:
					_ = fr.WriteSettings()
				case 2:
					_ = fr.WriteData(id, false, nil)
				case 3:
					_ = fr.WritePriority(id, http2.PriorityParam{Weight: 1})
				case 4:
					_ = fr.WriteWindowUpdate(0, 1)
				case 5:
					id += 2
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:3]})
				case 6:
					_ = fr.WriteContinuation(id, false, block[3:])
				case 7:
					id += 2
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
					_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
				case 8:
					id += 2
					_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
				case 9:
					_ = fr.WriteRawFrame(http2.FrameType(data[i+1]%12), 0, id, data)
				}
			}
		}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.HandleConn(server)
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = client.Write(b.Bytes())
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the connection manager still serves a connection whose client left; input %x", data)
		}
	})
}

// TestH2FloodEndsParkedConnection ends a connection for an outbound flood
// while its read loop waits, parked, for the client's next frame, and has
// its last stream end before the read loop looks: the stream's end used
// to arm the idle timeout over the wake-up the flood had set, so the read
// loop slept on (for the idle timeout, an hour) and the connection never
// sent its GOAWAY nor closed. TestH2OutboundFlood met it now and then; it
// is played here in one step, under the connection's lock, with one P so
// that the read loop cannot run in between.
func TestH2FloodEndsParkedConnection(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := startFloodProxy(t, nil, nil)
	c := dialFlood(t, p)
	// The response stalls on the default 64 KiB window, which the
	// client never opens: the stream stays, the read loop parks.
	req := frames(t, func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.requestBlock("/big"), EndStream: true, EndHeaders: true})
	})
	if _, err := c.nc.Write(req); err != nil {
		t.Fatal(err)
	}
	var h *h2Conn
	eventually(t, "the stream to wait for the client's window", func() bool {
		h = p.onlyH2Conn()
		if h == nil {
			return false
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		st := h.streams.get(1)
		return st != nil && st.waitingWindow
	})
	h.mu.Lock()
	h.failLocked(errOutboundFlood)
	h.dropStreamLocked(h.streams.get(1))
	h.mu.Unlock()
	if code := c.goAwayCode(); code != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
	}
	c.closed()
}

// onlyH2Conn returns the HTTP/2 state of the manager's one connection,
// nil until there is exactly one speaking HTTP/2.
func (p *proxy) onlyH2Conn() *h2Conn {
	var sc *serverConn
	p.m.mu.Lock()
	if len(p.m.conns) == 1 {
		for c := range p.m.conns {
			sc = c
		}
	}
	p.m.mu.Unlock()
	if sc == nil {
		return nil
	}
	// Under the connection's mutex, as setH2 sets it (the race
	// detector's finding otherwise).
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.h2
}
