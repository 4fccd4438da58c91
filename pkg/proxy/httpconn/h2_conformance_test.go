package httpconn

// HTTP/2 (h2c with prior knowledge) conformance tests, black box: a raw
// client writes and reads every frame itself with x/net/http2's Framer and
// HPACK, so that what the server sends, and in which order, is visible.
// They state what RFC 9113 and Envoy require of any HTTP/2 server of the
// proxy, whoever does the framing.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// h2ReadTimeout bounds every read of the raw client: a frame the server
// never sends fails the test instead of hanging it.
const h2ReadTimeout = 5 * time.Second

// h2MaxFrames bounds the frames one wait reads, should a server loop.
const h2MaxFrames = 10000

// rfcInitialWindow is RFC 9113's initial flow-control window (§6.9.2).
const rfcInitialWindow = 65535

// h2Resp is what the raw client saw of one stream.
type h2Resp struct {
	// headers is the final response header block, informational ones
	// (1xx) aside; trailers the block after the body.
	headers  []hpack.HeaderField
	trailers []hpack.HeaderField
	body     bytes.Buffer
	// dataFrames counts the DATA frames of the stream.
	dataFrames int
	// ended: END_STREAM arrived; endOnHeaders: it came on the response
	// HEADERS, with no DATA frame.
	ended        bool
	endOnHeaders bool
	reset        bool
	resetCode    http2.ErrCode
}

// done reports whether the server is finished with the stream.
func (r *h2Resp) done() bool { return r.ended || r.reset }

// header returns the first value of a response header field.
func (r *h2Resp) header(name string) (string, bool) {
	for _, f := range r.headers {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// status is the :status pseudo-header.
func (r *h2Resp) status() string {
	v, _ := r.header(":status")
	return v
}

// h2GoAway is a GOAWAY frame the raw client received.
type h2GoAway struct {
	lastStreamID uint32
	code         http2.ErrCode
	debug        string
}

// h2Client is a raw HTTP/2 client. It keeps flow-control accounting in both
// directions, answers the server's SETTINGS and PINGs, gives back the
// receive window as DATA arrives (unless autoWindow is off) and fails the
// test when the server overruns a window it was given. It is used by one
// goroutine, the test's.
type h2Client struct {
	t      testing.TB
	nc     net.Conn
	fr     *http2.Framer
	enc    *hpack.Encoder
	encBuf bytes.Buffer
	dec    *hpack.Decoder
	nextID uint32

	// firstFrame is the type of the first frame the server sent (with
	// its ACK flag), for the connection preface check.
	firstFrame    http2.FrameType
	firstFrameAck bool
	// What the server said and the client's send windows.
	serverSettings map[http2.SettingID]uint32
	settingsAcks   int
	maxFrame       uint32
	initialSend    int64
	connSend       int64
	streamSend     map[uint32]int64
	windowUpdates  int
	// The client's receive windows.
	initialRecv int64
	connRecv    int64
	streamRecv  map[uint32]int64
	autoWindow  bool

	streams  map[uint32]*h2Resp
	goAways  []h2GoAway
	pingAcks [][8]byte
	// block gathers a header block split over CONTINUATION frames.
	block       []byte
	blockStream uint32
	blockEnd    bool
	// trace lists the frames received, for failure messages.
	trace []string
}

// dialH2 opens an h2c connection with prior knowledge: the preface, the
// client's SETTINGS, and a wait until the server's SETTINGS came and ours
// were acknowledged. The connection closes when the test ends.
func dialH2(t testing.TB, addr string, settings ...http2.Setting) *h2Client {
	t.Helper()
	c := newH2Client(t, dialH2Raw(t, addr))
	c.send("preface", func() error { _, err := io.WriteString(c.nc, http2.ClientPreface); return err })
	c.send("SETTINGS", func() error { return c.fr.WriteSettings(settings...) })
	for _, s := range settings {
		if s.ID == http2.SettingInitialWindowSize {
			c.initialRecv = int64(s.Val)
		}
	}
	c.until("the server's SETTINGS and the ACK of ours", func() bool {
		return c.serverSettings != nil && c.settingsAcks > 0
	})
	return c
}

// dialH2Raw opens a TCP connection to the proxy and nothing more.
func dialH2Raw(t testing.TB, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, h2ReadTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// newH2Client wraps a connection whose preface is yet to be sent.
func newH2Client(t testing.TB, nc net.Conn) *h2Client {
	c := &h2Client{
		t: t, nc: nc, nextID: 1,
		firstFrame:  0xff,
		maxFrame:    16384,
		initialSend: rfcInitialWindow, connSend: rfcInitialWindow, streamSend: map[uint32]int64{},
		initialRecv: rfcInitialWindow, connRecv: rfcInitialWindow, streamRecv: map[uint32]int64{},
		autoWindow: true,
		streams:    map[uint32]*h2Resp{},
	}
	c.fr = http2.NewFramer(nc, bufio.NewReader(nc))
	// The client must be able to break the rules to test the server.
	c.fr.AllowIllegalWrites = true
	c.enc = hpack.NewEncoder(&c.encBuf)
	c.dec = hpack.NewDecoder(4096, nil)
	return c
}

// send runs a write of the test, under a deadline.
func (c *h2Client) send(what string, write func() error) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(h2ReadTimeout))
	if err := write(); err != nil {
		c.t.Fatalf("writing %s: %v\nframes received: %s", what, err, c.traceString())
	}
}

// reply runs a write the protocol asks of the client (an ACK, a window
// update): the server may have closed the connection already, which the
// test sees when it reads.
func (c *h2Client) reply(write func() error) {
	_ = c.nc.SetWriteDeadline(time.Now().Add(h2ReadTimeout))
	_ = write()
}

// resp returns the state of stream id.
func (c *h2Client) resp(id uint32) *h2Resp {
	r, ok := c.streams[id]
	if !ok {
		r = &h2Resp{}
		c.streams[id] = r
	}
	return r
}

// next reads and handles one frame; the frame is valid until the next read.
func (c *h2Client) next() (http2.Frame, error) {
	c.t.Helper()
	return c.nextWithin(h2ReadTimeout)
}

// nextWithin is next with a read deadline of d.
func (c *h2Client) nextWithin(d time.Duration) (http2.Frame, error) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	f, err := c.fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	c.record(f)
	c.handle(f)
	return f, nil
}

// record adds f to the trace and notes the first frame.
func (c *h2Client) record(f http2.Frame) {
	h := f.Header()
	if c.firstFrame == 0xff {
		c.firstFrame, c.firstFrameAck = h.Type, h.Flags.Has(http2.FlagSettingsAck)
	}
	s := h.String()
	switch f := f.(type) {
	case *http2.GoAwayFrame:
		s += " " + f.ErrCode.String()
	case *http2.RSTStreamFrame:
		s += " " + f.ErrCode.String()
	case *http2.WindowUpdateFrame:
		s += " +" + strconv.FormatUint(uint64(f.Increment), 10)
	}
	if len(c.trace) == 64 {
		c.trace = append(c.trace[:0], c.trace[32:]...)
	}
	c.trace = append(c.trace, s)
}

// traceString renders the frames received, latest last.
func (c *h2Client) traceString() string {
	if len(c.trace) == 0 {
		return "(none)"
	}
	return "\n  " + strings.Join(c.trace, "\n  ")
}

// handle updates the client's state with a frame and answers what the
// protocol asks to be answered.
func (c *h2Client) handle(f http2.Frame) {
	c.t.Helper()
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			c.settingsAcks++
			return
		}
		if c.serverSettings == nil {
			c.serverSettings = map[http2.SettingID]uint32{}
		}
		_ = f.ForeachSetting(func(s http2.Setting) error {
			c.serverSettings[s.ID] = s.Val
			switch s.ID {
			case http2.SettingInitialWindowSize:
				// §6.9.2: the change applies to the open streams.
				delta := int64(s.Val) - c.initialSend
				for id := range c.streamSend {
					c.streamSend[id] += delta
				}
				c.initialSend = int64(s.Val)
			case http2.SettingMaxFrameSize:
				c.maxFrame = s.Val
			}
			return nil
		})
		c.reply(c.fr.WriteSettingsAck)
	case *http2.PingFrame:
		if f.IsAck() {
			c.pingAcks = append(c.pingAcks, f.Data)
			return
		}
		c.reply(func() error { return c.fr.WritePing(true, f.Data) })
	case *http2.WindowUpdateFrame:
		c.windowUpdates++
		if f.StreamID == 0 {
			c.connSend += int64(f.Increment)
		} else {
			c.streamSend[f.StreamID] += int64(f.Increment)
		}
	case *http2.HeadersFrame:
		c.block = append(c.block[:0], f.HeaderBlockFragment()...)
		c.blockStream, c.blockEnd = f.StreamID, f.StreamEnded()
		if f.HeadersEnded() {
			c.endBlock()
		}
	case *http2.ContinuationFrame:
		c.block = append(c.block, f.HeaderBlockFragment()...)
		if f.HeadersEnded() {
			c.endBlock()
		}
	case *http2.DataFrame:
		c.data(f)
	case *http2.RSTStreamFrame:
		r := c.resp(f.StreamID)
		r.reset, r.resetCode = true, f.ErrCode
	case *http2.GoAwayFrame:
		c.goAways = append(c.goAways, h2GoAway{f.LastStreamID, f.ErrCode, string(f.DebugData())})
	}
}

// endBlock decodes a complete header block.
func (c *h2Client) endBlock() {
	c.t.Helper()
	fields, err := c.dec.DecodeFull(c.block)
	if err != nil {
		c.t.Fatalf("stream %d: undecodable header block: %v", c.blockStream, err)
	}
	r := c.resp(c.blockStream)
	switch {
	case r.headers == nil:
		if len(fields) > 0 && fields[0].Name == ":status" && strings.HasPrefix(fields[0].Value, "1") {
			// Informational: the final head comes later.
			break
		}
		r.headers = fields
		r.endOnHeaders = c.blockEnd
	default:
		r.trailers = fields
	}
	if c.blockEnd {
		r.ended = true
	}
}

// data takes a DATA frame's bytes and checks the flow control of the
// server's sending (§6.9.1: a sender must not exceed either window).
func (c *h2Client) data(f *http2.DataFrame) {
	c.t.Helper()
	id := f.StreamID
	r := c.resp(id)
	n := int64(f.Length) // padding counts too
	if _, ok := c.streamRecv[id]; !ok {
		c.streamRecv[id] = c.initialRecv
	}
	c.connRecv -= n
	c.streamRecv[id] -= n
	if c.connRecv < 0 || c.streamRecv[id] < 0 {
		c.t.Fatalf("stream %d: the server overran the flow-control window (connection %d, stream %d)\nframes received: %s",
			id, c.connRecv, c.streamRecv[id], c.traceString())
	}
	r.body.Write(f.Data())
	r.dataFrames++
	if f.StreamEnded() {
		r.ended = true
	}
	if c.autoWindow && n > 0 {
		c.grant(0, n)
		if !r.ended {
			c.grant(id, n)
		}
	}
}

// grant sends a WINDOW_UPDATE and adds it to the receive window it opens.
func (c *h2Client) grant(id uint32, n int64) {
	if id == 0 {
		c.connRecv += n
	} else {
		if _, ok := c.streamRecv[id]; !ok {
			c.streamRecv[id] = c.initialRecv
		}
		c.streamRecv[id] += n
	}
	c.reply(func() error { return c.fr.WriteWindowUpdate(id, uint32(n)) })
}

// until reads frames until cond holds; a read that fails or times out
// fails the test.
func (c *h2Client) until(what string, cond func() bool) {
	c.t.Helper()
	for i := 0; !cond(); i++ {
		if i == h2MaxFrames {
			c.t.Fatalf("waiting for %s: %d frames and still waiting\nframes received: %s", what, i, c.traceString())
		}
		if _, err := c.next(); err != nil {
			c.t.Fatalf("waiting for %s: %v\nframes received: %s", what, err, c.traceString())
		}
	}
}

// quiet reads the frames that arrive within d and handles them, for checks
// that the server sends nothing it must not. It fails the test if the
// connection breaks.
func (c *h2Client) quiet(d time.Duration) {
	c.t.Helper()
	for range h2MaxFrames {
		_, err := c.nextWithin(d)
		if isTimeout(err) {
			return
		}
		if err != nil {
			c.t.Fatalf("connection broke: %v\nframes received: %s", err, c.traceString())
		}
	}
}

// waitClosed reads until the server closes the connection and returns the
// error that told so (EOF, a reset); a connection still open after
// h2ReadTimeout fails the test.
func (c *h2Client) waitClosed() error {
	c.t.Helper()
	for range h2MaxFrames {
		_, err := c.next()
		if isTimeout(err) {
			c.t.Fatalf("the connection is still open\nframes received: %s", c.traceString())
		}
		if err != nil {
			return err
		}
	}
	c.t.Fatalf("the connection is still open after %d frames", h2MaxFrames)
	return nil
}

// requestHead is a request's header list: pseudo-headers, then extra
// (name, value pairs).
func requestHead(method, path string, extra ...string) []string {
	return append([]string{":method", method, ":scheme", "http", ":authority", "example.com", ":path", path}, extra...)
}

// headers sends a header block (name, value pairs, written as given, valid
// or not) on stream id.
func (c *h2Client) headers(id uint32, end bool, fields ...string) {
	c.t.Helper()
	c.encBuf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	if _, ok := c.streamSend[id]; !ok {
		c.streamSend[id] = c.initialSend
	}
	c.send("HEADERS", func() error {
		return c.fr.WriteHeaders(http2.HeadersFrameParam{
			StreamID: id, BlockFragment: c.encBuf.Bytes(), EndStream: end, EndHeaders: true,
		})
	})
}

// open sends a request head on a new stream and returns its id.
func (c *h2Client) open(end bool, fields ...string) uint32 {
	c.t.Helper()
	id := c.nextID
	c.nextID += 2
	c.headers(id, end, fields...)
	return id
}

// get opens a GET stream.
func (c *h2Client) get(path string) uint32 {
	c.t.Helper()
	return c.open(true, requestHead("GET", path)...)
}

// sendData sends p on stream id in DATA frames no larger than the server
// allows, within the flow-control windows it grants (waiting for its
// WINDOW_UPDATEs when they are spent); end sets END_STREAM on the last.
func (c *h2Client) sendData(id uint32, p []byte, end bool) {
	c.t.Helper()
	for {
		n := min(len(p), int(c.maxFrame))
		if n > 0 {
			c.until(fmt.Sprintf("flow-control window to send on stream %d", id), func() bool {
				return c.resp(id).reset || (c.connSend > 0 && c.streamSend[id] > 0)
			})
			if c.resp(id).reset {
				c.t.Fatalf("stream %d reset (%v) while sending its body\nframes received: %s", id, c.resp(id).resetCode, c.traceString())
			}
			n = int(min(int64(n), c.connSend, c.streamSend[id]))
		}
		last := end && n == len(p)
		c.send("DATA", func() error { return c.fr.WriteData(id, last, p[:n]) })
		c.connSend -= int64(n)
		c.streamSend[id] -= int64(n)
		p = p[n:]
		if len(p) == 0 {
			return
		}
	}
}

// response waits until the server is done with stream id.
func (c *h2Client) response(id uint32) *h2Resp {
	c.t.Helper()
	r := c.resp(id)
	c.until(fmt.Sprintf("the end of stream %d", id), r.done)
	return r
}

// wantOK checks that stream id ended with :status 200 and body want.
func (c *h2Client) wantOK(id uint32, want string) *h2Resp {
	c.t.Helper()
	r := c.response(id)
	if r.reset || r.status() != "200" || r.body.String() != want {
		c.t.Fatalf("stream %d: reset %v (%v), status %q, body %q; want 200 and %q\nframes received: %s",
			id, r.reset, r.resetCode, r.status(), r.body.String(), want, c.traceString())
	}
	return r
}

// wantGoAway waits for a GOAWAY and checks its error code.
func (c *h2Client) wantGoAway(code http2.ErrCode) h2GoAway {
	c.t.Helper()
	c.until("GOAWAY", func() bool { return len(c.goAways) > 0 })
	g := c.goAways[len(c.goAways)-1]
	if g.code != code {
		c.t.Fatalf("GOAWAY %v (%q), want %v\nframes received: %s", g.code, g.debug, code, c.traceString())
	}
	return g
}

// h2Upstream is the HTTP/1.1 upstream of the conformance tests:
//   - /len answers "len=N sha256=H" of the request body;
//   - /bytes?n=N answers N bytes of bodyPattern;
//   - /slow announces itself on arrived and answers "late" once release
//     is closed, or reports on cancelled when the proxy gives up on it;
//   - anything else is echo.
type h2Upstream struct {
	arrived     chan struct{}
	cancelled   chan struct{}
	release     chan struct{}
	releaseOnce sync.Once
}

// releaseSlow lets the /slow requests answer.
func (u *h2Upstream) releaseSlow() { u.releaseOnce.Do(func() { close(u.release) }) }

// ServeHTTP implements http.Handler.
func (u *h2Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/len":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = fmt.Fprintf(w, "len=%d sha256=%x", len(b), sha256.Sum256(b))
	case "/bytes":
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 {
			http.Error(w, "bad n", http.StatusBadRequest)
			return
		}
		_, _ = w.Write(bodyPattern(n))
	case "/first":
		// The head and the body's first byte, then the rest.
		var first [1]byte
		if _, err := io.ReadFull(r.Body, first[:]); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u.arrived <- struct{}{}
		rest, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = fmt.Fprintf(w, "%s%s", first[:], rest)
	case "/slow":
		u.arrived <- struct{}{}
		select {
		case <-u.release:
			_, _ = io.WriteString(w, "late")
		case <-r.Context().Done():
			u.cancelled <- struct{}{}
		}
	default:
		echo(w, r)
	}
}

// bodyPattern is n bytes that show where a body was cut or shuffled.
func bodyPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[i%36]
	}
	return b
}

// lenBody is what /len answers for body.
func lenBody(body []byte) string {
	return fmt.Sprintf("len=%d sha256=%x", len(body), sha256.Sum256(body))
}

// h2Fixture is a proxy on loopback with the conformance routes:
//   - /direct answers "hello direct" itself (direct_response);
//   - /hop goes to a raw HTTP/1.1 upstream whose response carries every
//     connection-specific header, with a chunked body "hello world";
//   - everything else goes to h2Upstream.
type h2Fixture struct {
	*proxy
	up *h2Upstream
}

// hopResponse is the raw upstream's answer to /hop.
const hopResponse = "HTTP/1.1 200 OK\r\n" +
	"Connection: keep-alive, X-Hop\r\n" +
	"Keep-Alive: timeout=5\r\n" +
	"Proxy-Connection: keep-alive\r\n" +
	"Transfer-Encoding: chunked\r\n" +
	"Upgrade: h2c\r\n" +
	"X-Hop: nominated by connection\r\n" +
	"X-Upstream: hop\r\n" +
	"\r\n" +
	"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"

// startH2Proxy starts the conformance proxy with a codec and, optionally,
// a drain state; edits change the connection manager's configuration.
func startH2Proxy(t *testing.T, codec hcmv3.HttpConnectionManager_CodecType, drain Drainer, edits ...func(*hcmv3.HttpConnectionManager)) *h2Fixture {
	t.Helper()
	up := &h2Upstream{arrived: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), release: make(chan struct{})}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	hop := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
		for {
			if head := readRequestHead(r); !strings.HasSuffix(head, "\r\n\r\n") {
				return
			}
			if _, err := io.WriteString(c, hopResponse); err != nil {
				return
			}
		}
	})
	st := stats.NewStore()
	ups := fakeUpstreams{
		"up":  newFakeCluster(st, "up", false, hostOf(srv)),
		"hop": newFakeCluster(st, "hop", false, hop),
	}
	t.Cleanup(func() {
		for _, c := range ups {
			c.closeIdle()
		}
	})
	cfg := hcm(routeConfig(
		directRoute("/direct", 200, "hello direct"),
		clusterRoute("/hop", "hop"),
		clusterRoute("/", "up"),
	))
	cfg.CodecType = codec
	for _, edit := range edits {
		edit(cfg)
	}
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Drain: drain})
	// Cleanups run last first: the slow requests are let go before the
	// proxy and the upstream wait for them.
	t.Cleanup(up.releaseSlow)
	return &h2Fixture{proxy: p, up: up}
}

// waitSignal waits for a signal of the upstream.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(h2ReadTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestH2Preface checks the connection preface (RFC 9113 §3.4): the
// server's first frame is SETTINGS, it acknowledges the client's, and it
// answers a PING with an ACK carrying the same 8 bytes (§6.7).
func TestH2Preface(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	if c.firstFrame != http2.FrameSettings || c.firstFrameAck {
		t.Fatalf("the server's first frame is %v (ack %v), want SETTINGS\nframes received: %s", c.firstFrame, c.firstFrameAck, c.traceString())
	}
	for id, v := range c.serverSettings {
		if err := (http2.Setting{ID: id, Val: v}).Valid(); err != nil {
			t.Errorf("the server sent an invalid setting %v=%d: %v", id, v, err)
		}
	}
	tests := map[string][8]byte{
		"ascii payload":  {'o', 'u', 't', 'r', 'i', 'g', 'g', 'r'},
		"binary payload": {0, 0xff, 1, 0xfe, 2, 0xfd, 3, 0xfc},
	}
	for name, payload := range tests {
		t.Run(name, func(t *testing.T) {
			c.t = t
			c.send("PING", func() error { return c.fr.WritePing(false, payload) })
			c.until("PING ACK", func() bool { return len(c.pingAcks) > 0 })
			if got := c.pingAcks[len(c.pingAcks)-1]; got != payload {
				t.Fatalf("PING ACK carries %x, want %x", got, payload)
			}
			c.pingAcks = nil
		})
	}
	// The connection still serves requests after the exchanges.
	c.t = t
	c.wantOK(c.get("/direct"), "hello direct")
}

// forbiddenResponseFields are the fields RFC 9113 §8.2.2 forbids in HTTP/2.
var forbiddenResponseFields = []string{"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}

// checkResponseHead checks a response head against RFC 9113 §8.2 and §8.3:
// lower-case names, pseudo-headers first and only :status, no
// connection-specific field, and a content-length, if any, that the body
// matches.
func checkResponseHead(t *testing.T, r *h2Resp) {
	t.Helper()
	regular := false
	for _, f := range r.headers {
		if f.Name != strings.ToLower(f.Name) {
			t.Errorf("header name %q is not lower case", f.Name)
		}
		if strings.HasPrefix(f.Name, ":") {
			if regular {
				t.Errorf("pseudo-header %q after a regular field", f.Name)
			}
			if f.Name != ":status" {
				t.Errorf("response pseudo-header %q", f.Name)
			}
			continue
		}
		regular = true
		if slices.Contains(forbiddenResponseFields, f.Name) {
			t.Errorf("connection-specific field %q: %q", f.Name, f.Value)
		}
	}
	if cl, ok := r.header("content-length"); ok && cl != strconv.Itoa(r.body.Len()) {
		t.Errorf("content-length %s, body of %d bytes", cl, r.body.Len())
	}
}

// headLines renders a response head for a golden file: one "name: value"
// line per field, sorted, with the values that change between runs masked.
func headLines(fields []hpack.HeaderField) string {
	lines := make([]string, 0, len(fields))
	for _, f := range fields {
		v := f.Value
		switch f.Name {
		case "date", "x-envoy-upstream-service-time":
			v = "<masked>"
		}
		lines = append(lines, f.Name+": "+v)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// TestH2Responses checks responses over h2c, answered by the proxy itself
// or by an upstream: the status, the head (golden), the body and
// END_STREAM.
func TestH2Responses(t *testing.T) {
	tests := map[string]struct {
		path     string
		wantBody string
		// wantLength: the length is known, so content-length must be
		// sent.
		wantLength bool
		// golden names the file of the expected head.
		golden string
	}{
		"direct response": {path: "/direct", wantBody: "hello direct", wantLength: true, golden: "direct"},
		"proxied":         {path: "/bytes?n=10", wantBody: string(bodyPattern(10)), wantLength: true, golden: "proxied"},
		"proxied, chunked, with connection-specific fields": {
			path: "/hop", wantBody: "hello world", golden: "hop_by_hop",
		},
	}
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c.t = t
			r := c.wantOK(c.get(tc.path), tc.wantBody)
			checkResponseHead(t, r)
			if _, ok := r.header("content-length"); tc.wantLength && !ok {
				t.Errorf("no content-length for a body of known length")
			}
			if !r.ended {
				t.Errorf("no END_STREAM")
			}
			if _, ok := r.header("x-hop"); ok {
				t.Errorf("x-hop, nominated by the upstream's Connection header, reached the client")
			}
			golden.Check(t, filepath.Join("testdata", "h2", tc.golden+".golden"), []byte(headLines(r.headers)))
		})
	}
}

// TestH2ConcurrentStreams interleaves 20 streams on one connection: all
// heads first, then the bodies in two DATA frames each, the first halves
// in order and the second halves in reverse; each response must belong to
// its own stream.
func TestH2ConcurrentStreams(t *testing.T) {
	const streams = 20
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	ids := make([]uint32, streams)
	for i := range ids {
		ids[i] = c.open(false, requestHead("POST", "/echo/"+strconv.Itoa(i))...)
	}
	for i, id := range ids {
		c.sendData(id, []byte("body-"+strconv.Itoa(i)+"-"), false)
	}
	for i := len(ids) - 1; i >= 0; i-- {
		c.sendData(ids[i], []byte("end"), true)
	}
	for i, id := range ids {
		r := c.response(id)
		body := r.body.String()
		first, _, _ := strings.Cut(body, "\n")
		if r.reset || r.status() != "200" || first != "POST /echo/"+strconv.Itoa(i)+" HTTP/1.1" ||
			!strings.HasSuffix(body, "\n\nbody-"+strconv.Itoa(i)+"-end") {
			t.Errorf("stream %d (request %d): reset %v, status %q, body:\n%s", id, i, r.reset, r.status(), body)
		}
	}
}

// TestH2RequestBody sends request bodies in several DATA frames to an
// upstream that answers the length and digest of what it got; the largest
// is bigger than every window the server opened at the start, so only its
// WINDOW_UPDATEs let it through.
func TestH2RequestBody(t *testing.T) {
	tests := map[string]struct {
		// size returns the body size, given the client after the
		// handshake.
		size          func(c *h2Client) int
		contentLength bool
	}{
		"several small frames":                    {size: func(*h2Client) int { return 5 }},
		"several small frames, content-length":    {size: func(*h2Client) int { return 5 }, contentLength: true},
		"larger than the server's windows":        {size: beyondWindows},
		"larger than the windows, content-length": {size: beyondWindows, contentLength: true},
	}
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := dialH2(t, f.addr)
			size := tc.size(c)
			body := bodyPattern(size)
			var extra []string
			if tc.contentLength {
				extra = []string{"content-length", strconv.Itoa(size)}
			}
			id := c.open(false, requestHead("POST", "/len", extra...)...)
			updates := c.windowUpdates
			// Frames of 1, 2, 3... bytes first, then the rest at the
			// largest size the server allows.
			rest := body
			for n := 1; n <= 3 && len(rest) > n; n++ {
				c.sendData(id, rest[:n], false)
				rest = rest[n:]
			}
			c.sendData(id, rest, true)
			c.wantOK(id, lenBody(body))
			if size > rfcInitialWindow && c.windowUpdates == updates {
				t.Errorf("%d bytes went through without a WINDOW_UPDATE", size)
			}
		})
	}
}

// TestH2RequestHeadBeforeBody: a client that sends its request's head
// and a first piece of body, then waits, has them reach the HTTP/1.1
// upstream at once; the proxy does not hold them until the next piece.
func TestH2RequestHeadBeforeBody(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	id := c.open(false, requestHead("POST", "/first")...)
	c.sendData(id, []byte("a"), false)
	waitSignal(t, f.up.arrived, "the head and the first piece upstream before the rest is sent")
	c.sendData(id, []byte("bc"), true)
	c.wantOK(id, "abc")
}

// beyondWindows is a body size that exceeds both flow-control windows the
// server granted a new stream.
func beyondWindows(c *h2Client) int {
	return int(max(c.initialSend, c.connSend, rfcInitialWindow)) + 1<<16
}

// TestH2FlowControlToClient sets small receive windows on the client: the
// server must send no more than each window allows (the client fails the
// test on an overrun), stop there, and go on after WINDOW_UPDATEs (RFC 9113
// §6.9).
func TestH2FlowControlToClient(t *testing.T) {
	tests := map[string]struct {
		initialWindow uint32
		size          int
		// limit is the window that stops the server first.
		limit int
	}{
		"stream window":     {initialWindow: 100, size: 1000, limit: 100},
		"connection window": {initialWindow: 1 << 20, size: 100_000, limit: rfcInitialWindow},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
			c := dialH2(t, f.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: tc.initialWindow})
			c.autoWindow = false
			id := c.get("/bytes?n=" + strconv.Itoa(tc.size))
			r := c.resp(id)
			c.until("the first window of the body", func() bool { return r.body.Len() >= tc.limit || r.done() })
			if r.done() || r.body.Len() != tc.limit {
				t.Fatalf("got %d bytes (done %v), want the server to stop at the window of %d", r.body.Len(), r.done(), tc.limit)
			}
			// Nothing more may come while the window is closed.
			c.quiet(100 * time.Millisecond)
			if r.body.Len() != tc.limit {
				t.Fatalf("got %d bytes with a closed window of %d", r.body.Len(), tc.limit)
			}
			// Give the windows back, as a slow reader would, until the
			// body is complete.
			granted, rounds := 0, 0
			for !r.done() {
				// Each round brings at least one byte, or until fails.
				if rounds++; rounds > tc.size {
					t.Fatalf("body still incomplete after %d rounds of WINDOW_UPDATEs: %d bytes", rounds, r.body.Len())
				}
				n := int64(r.body.Len() - granted)
				granted = r.body.Len()
				c.grant(0, n)
				c.grant(id, n)
				seen := r.body.Len()
				c.until("more of the body after WINDOW_UPDATE", func() bool { return r.body.Len() > seen || r.done() })
			}
			if r.reset || r.body.String() != string(bodyPattern(tc.size)) {
				t.Fatalf("reset %v (%v), body of %d bytes, want %d bytes of the pattern", r.reset, r.resetCode, r.body.Len(), tc.size)
			}
			if rounds < 2 {
				t.Errorf("the body completed after %d window updates: the windows did not limit it", rounds)
			}
		})
	}
}

// TestH2Head checks HEAD: the head only, END_STREAM on its HEADERS frame,
// and the content-length a GET would get, if any.
func TestH2Head(t *testing.T) {
	tests := map[string]struct {
		path       string
		wantLength string
	}{
		"direct response": {path: "/direct", wantLength: "12"},
		"proxied":         {path: "/bytes?n=10", wantLength: "10"},
	}
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c.t = t
			r := c.response(c.open(true, requestHead("HEAD", tc.path)...))
			if r.reset || r.status() != "200" {
				t.Fatalf("reset %v (%v), status %q; want 200", r.reset, r.resetCode, r.status())
			}
			if !r.endOnHeaders || r.dataFrames != 0 {
				t.Errorf("END_STREAM on HEADERS %v, %d DATA frames; want the head alone", r.endOnHeaders, r.dataFrames)
			}
			if cl, ok := r.header("content-length"); ok && cl != tc.wantLength {
				t.Errorf("content-length %s, want %s (as for GET)", cl, tc.wantLength)
			}
		})
	}
}

// streamErrors sets override_stream_error_on_invalid_http_message: a
// malformed request resets its stream only.
func streamErrors(cfg *hcmv3.HttpConnectionManager) {
	if cfg.Http2ProtocolOptions == nil {
		cfg.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{}
	}
	cfg.Http2ProtocolOptions.OverrideStreamErrorOnInvalidHttpMessage = wrapperspb.Bool(true)
}

// TestH2MalformedRequests sends malformed request heads (RFC 9113 §8.1.1).
// As in Envoy, by default each ends its connection with GOAWAY
// PROTOCOL_ERROR; with stream errors allowed (override_stream_error_on_
// invalid_http_message, or the older stream_error_on_invalid_http_messaging)
// each stream is reset and the connection goes on serving. Both count
// http2.rx_messaging_error.
func TestH2MalformedRequests(t *testing.T) {
	tests := map[string]struct {
		fields []string
	}{
		"no :path":                       {fields: []string{":method", "GET", ":scheme", "http", ":authority", "example.com"}},
		"no :method":                     {fields: []string{":scheme", "http", ":authority", "example.com", ":path", "/direct"}},
		"empty :path":                    {fields: []string{":method", "GET", ":scheme", "http", ":authority", "example.com", ":path", ""}},
		"duplicate :path":                {fields: requestHead("GET", "/direct", ":path", "/other")},
		"pseudo-header after a field":    {fields: []string{":method", "GET", ":scheme", "http", "x-a", "b", ":path", "/direct"}},
		"unknown pseudo-header":          {fields: requestHead("GET", "/direct", ":foo", "bar")},
		"response pseudo-header":         {fields: requestHead("GET", "/direct", ":status", "200")},
		"upper-case header name":         {fields: requestHead("GET", "/direct", "X-Upper", "v")},
		"header value with a line break": {fields: requestHead("GET", "/direct", "x-a", "b\r\nx-b: c")},
		"connection header":              {fields: requestHead("GET", "/direct", "connection", "keep-alive")},
		"keep-alive header":              {fields: requestHead("GET", "/direct", "keep-alive", "timeout=5")},
		"transfer-encoding header":       {fields: requestHead("GET", "/direct", "transfer-encoding", "chunked")},
		"te other than trailers":         {fields: requestHead("GET", "/direct", "te", "gzip")},
	}
	t.Run("connection error by default", func(t *testing.T) {
		f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
		n := uint64(0)
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				c := dialH2(t, f.addr)
				c.open(true, tc.fields...)
				c.wantGoAway(http2.ErrCodeProtocol)
				n++
				f.waitCounter(t, "http2.rx_messaging_error", n)
			})
		}
	})
	for name, edit := range map[string]func(*hcmv3.HttpConnectionManager){
		"stream error with the override": streamErrors,
		"stream error with the older field": func(cfg *hcmv3.HttpConnectionManager) {
			//lint:ignore SA1019 the deprecated field is still honoured, as in Envoy
			cfg.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{StreamErrorOnInvalidHttpMessaging: true}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil, edit)
			c := dialH2(t, f.addr)
			n := uint64(0)
			for name, tc := range tests {
				t.Run(name, func(t *testing.T) {
					c.t = t
					id := c.open(true, tc.fields...)
					r := c.response(id)
					if !r.reset || r.resetCode != http2.ErrCodeProtocol {
						t.Errorf("reset %v (%v), status %q; want RST_STREAM PROTOCOL_ERROR\nframes received: %s",
							r.reset, r.resetCode, r.status(), c.traceString())
					}
					if len(c.goAways) > 0 {
						t.Fatalf("GOAWAY %v: a malformed request must cost its stream only", c.goAways)
					}
					c.wantOK(c.get("/direct"), "hello direct")
					n++
					f.waitCounter(t, "http2.rx_messaging_error", n)
				})
			}
		})
	}
}

// TestH2ConnectionErrors sends frames that are connection errors (RFC 9113
// §5.4.1): the server answers GOAWAY with the error's code and closes the
// connection.
func TestH2ConnectionErrors(t *testing.T) {
	tests := map[string]struct {
		send func(c *h2Client)
		want http2.ErrCode
	}{
		"DATA on stream 0": {
			send: func(c *h2Client) { c.send("DATA", func() error { return c.fr.WriteData(0, true, []byte("x")) }) },
			want: http2.ErrCodeProtocol,
		},
		"HEADERS on an even stream": {
			send: func(c *h2Client) { c.headers(2, true, requestHead("GET", "/direct")...) },
			want: http2.ErrCodeProtocol,
		},
		"SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1": {
			send: func(c *h2Client) {
				c.send("SETTINGS", func() error {
					return c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
				})
			},
			want: http2.ErrCodeFlowControl,
		},
		"SETTINGS_ENABLE_PUSH of 2": {
			send: func(c *h2Client) {
				c.send("SETTINGS", func() error { return c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 2}) })
			},
			want: http2.ErrCodeProtocol,
		},
		"SETTINGS_MAX_FRAME_SIZE below 16384": {
			send: func(c *h2Client) {
				c.send("SETTINGS", func() error { return c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 100}) })
			},
			want: http2.ErrCodeProtocol,
		},
		"connection WINDOW_UPDATE of 0": {
			send: func(c *h2Client) { c.send("WINDOW_UPDATE", func() error { return c.fr.WriteWindowUpdate(0, 0) }) },
			want: http2.ErrCodeProtocol,
		},
		"connection window above 2^31-1": {
			send: func(c *h2Client) {
				c.send("WINDOW_UPDATE", func() error { return c.fr.WriteWindowUpdate(0, 1<<31-1) })
			},
			want: http2.ErrCodeFlowControl,
		},
		// Malformed HPACK blocks (RFC 7541), each on stream 1.
		"HPACK index past the tables": {
			send: func(c *h2Client) { c.rawHeaders(0x82, 0xbe) },
			want: http2.ErrCodeCompression,
		},
		"HPACK table size update after a field": {
			send: func(c *h2Client) { c.rawHeaders(0x82, 0x20) },
			want: http2.ErrCodeCompression,
		},
		"HPACK table size update over SETTINGS_HEADER_TABLE_SIZE": {
			send: func(c *h2Client) { c.rawHeaders(0x3f, 0xe2, 0x1f) }, // 4097
			want: http2.ErrCodeCompression,
		},
		"HPACK Huffman string holding EOS": {
			send: func(c *h2Client) { c.rawHeaders(0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00) },
			want: http2.ErrCodeCompression,
		},
		"HPACK integer over 32 bits": {
			send: func(c *h2Client) { c.rawHeaders(0xff, 0xff, 0xff, 0xff, 0xff, 0x7f) },
			want: http2.ErrCodeCompression,
		},
		"CONTINUATION without HEADERS": {
			send: func(c *h2Client) {
				c.send("CONTINUATION", func() error { return c.fr.WriteContinuation(1, true, []byte{0x82}) })
			},
			want: http2.ErrCodeProtocol,
		},
	}
	t.Parallel()
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	clients := make(map[string]*h2Client, len(tests))
	for name, tc := range tests {
		c := dialH2(t, f.addr)
		clients[name] = c
		t.Run(name, func(t *testing.T) {
			c.t = t
			tc.send(c)
			c.wantGoAway(tc.want)
		})
	}
	// The closes are checked once every GOAWAY is in: a server may give
	// the client time to read its GOAWAY (net/http's gives a second),
	// and the connections then use it up together.
	for name, c := range clients {
		t.Run(name+", then closes", func(t *testing.T) {
			if len(c.goAways) == 0 {
				t.Skip("no GOAWAY")
			}
			c.t = t
			c.waitClosed()
		})
	}
}

// rawHeaders sends block as one HEADERS frame on stream 1, ending the
// stream.
func (c *h2Client) rawHeaders(block ...byte) {
	c.send("HEADERS", func() error {
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndStream: true, EndHeaders: true})
	})
}

// TestH2BadPreface sends what is not a valid start of an HTTP/2
// connection: the connection must close, after a GOAWAY or, on an AUTO
// listener that took the bytes for HTTP/1, an HTTP/1 error response.
func TestH2BadPreface(t *testing.T) {
	tests := map[string]struct {
		codec hcmv3.HttpConnectionManager_CodecType
		send  string
		// wantGoAwaySent: the connection must end with a GOAWAY of
		// code wantGoAway, unless the server reset the connection
		// before it could be read (it leaves unread bytes behind).
		// Otherwise a GOAWAY is optional (RFC 9113 §3.4), but must
		// not say NO_ERROR.
		wantGoAwaySent bool
		wantGoAway     http2.ErrCode
	}{
		"bad preface, http2 codec": {codec: hcmv3.HttpConnectionManager_HTTP2, send: "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"},
		"bad preface, auto codec":  {codec: hcmv3.HttpConnectionManager_AUTO, send: "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"},
		"garbage after the preface": {
			codec: hcmv3.HttpConnectionManager_AUTO, send: http2.ClientPreface + "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		},
		"first frame not SETTINGS": {
			codec: hcmv3.HttpConnectionManager_AUTO, send: http2.ClientPreface + "\x00\x00\x08\x06\x00\x00\x00\x00\x00pingping",
			wantGoAway: http2.ErrCodeProtocol, wantGoAwaySent: true,
		},
	}
	t.Parallel()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := startH2Proxy(t, tc.codec, nil)
			nc := dialH2Raw(t, f.addr)
			_ = nc.SetDeadline(time.Now().Add(h2ReadTimeout))
			if _, err := io.WriteString(nc, tc.send); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(nc)
			if isTimeout(err) {
				t.Fatalf("the connection is still open; received %q", got)
			}
			if bytes.HasPrefix(got, []byte("HTTP/1.")) {
				if tc.codec != hcmv3.HttpConnectionManager_AUTO || !strings.HasPrefix(tc.send, "PRI") {
					t.Errorf("an HTTP/1 answer to an HTTP/2 connection: %q", got)
				}
				return
			}
			g, found := findGoAway(t, got)
			switch {
			case found && g.code == http2.ErrCodeNo:
				t.Errorf("GOAWAY NO_ERROR for a protocol error")
			case tc.wantGoAwaySent && !found && err == nil:
				t.Errorf("the connection closed without GOAWAY %v; received %q", tc.wantGoAway, got)
			case tc.wantGoAwaySent && found && g.code != tc.wantGoAway:
				t.Errorf("GOAWAY %v, want %v", g.code, tc.wantGoAway)
			}
		})
	}
}

// findGoAway parses the frames a server sent and returns its GOAWAY.
func findGoAway(t *testing.T, b []byte) (h2GoAway, bool) {
	t.Helper()
	fr := http2.NewFramer(io.Discard, bytes.NewReader(b))
	for range h2MaxFrames {
		f, err := fr.ReadFrame()
		if err != nil {
			return h2GoAway{}, false
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return h2GoAway{g.LastStreamID, g.ErrCode, string(g.DebugData())}, true
		}
	}
	return h2GoAway{}, false
}

// TestH2ContentLengthMismatch sends bodies that disagree with their
// content-length (RFC 9113 §8.1.1: malformed). With stream errors allowed
// the stream is reset and the connection goes on serving; by default the
// connection ends, as for any malformed request.
func TestH2ContentLengthMismatch(t *testing.T) {
	tests := map[string]struct {
		contentLength string
		body          string
	}{
		"fewer bytes than content-length": {
			contentLength: "10", body: "abc",
		},
		"more bytes than content-length": {contentLength: "3", body: "abcdef"},
	}
	t.Run("connection error by default", func(t *testing.T) {
		f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				c := dialH2(t, f.addr)
				id := c.open(false, requestHead("POST", "/len", "content-length", tc.contentLength)...)
				c.sendData(id, []byte(tc.body), true)
				c.wantGoAway(http2.ErrCodeProtocol)
			})
		}
	})
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil, streamErrors)
	c := dialH2(t, f.addr)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c.t = t
			id := c.open(false, requestHead("POST", "/len", "content-length", tc.contentLength)...)
			c.sendData(id, []byte(tc.body), true)
			r := c.response(id)
			if !r.reset || r.resetCode != http2.ErrCodeProtocol {
				t.Errorf("reset %v (%v), status %q, body %q; want RST_STREAM PROTOCOL_ERROR\nframes received: %s",
					r.reset, r.resetCode, r.status(), r.body.String(), c.traceString())
			}
			c.wantOK(c.get("/direct"), "hello direct")
		})
	}
}

// TestH2ClientResetKeepsConnection resets a stream whose upstream has not
// answered yet: the other streams of the connection go on.
func TestH2ClientResetKeepsConnection(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	id := c.get("/slow")
	waitSignal(t, f.up.arrived, "the slow request upstream")
	c.send("RST_STREAM", func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	c.wantOK(c.get("/direct"), "hello direct")
	c.wantOK(c.get("/bytes?n=3"), "012")
	if len(c.goAways) > 0 {
		t.Errorf("GOAWAY %v after a client's RST_STREAM", c.goAways)
	}
}

// TestH2ClientResetStopsUpstream resets a stream whose upstream has not
// answered yet: as Envoy does, the proxy gives up on the upstream request
// at once (closing its HTTP/1 connection) and counts the reset in
// downstream_rq_rx_reset.
func TestH2ClientResetStopsUpstream(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	id := c.get("/slow")
	waitSignal(t, f.up.arrived, "the slow request upstream")
	c.send("RST_STREAM", func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	waitSignal(t, f.up.cancelled, "the upstream request to be cancelled")
	f.waitCounter(t, "http.test.downstream_rq_rx_reset", 1)
	c.wantOK(c.get("/direct"), "hello direct")
}

// TestH2RequestTrailers sends a request body followed by trailers (a
// HEADERS frame with END_STREAM, RFC 9113 §8.1): the request is served.
func TestH2RequestTrailers(t *testing.T) {
	tests := map[string]struct {
		body     string
		trailers []string
	}{
		"one trailer after DATA":       {body: "abc", trailers: []string{"x-checksum", "1"}},
		"trailers after an empty body": {trailers: []string{"x-checksum", "2", "x-other", "v"}},
	}
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c.t = t
			id := c.open(false, requestHead("POST", "/len")...)
			if tc.body != "" {
				c.sendData(id, []byte(tc.body), false)
			}
			c.headers(id, true, tc.trailers...)
			c.wantOK(id, lenBody([]byte(tc.body)))
		})
	}
}

// TestH2MalformedRequestTrailers sends trailers no message may carry: as
// a malformed request head, each ends the connection with GOAWAY
// PROTOCOL_ERROR (Envoy's default) and counts http2.rx_messaging_error.
func TestH2MalformedRequestTrailers(t *testing.T) {
	tests := map[string][]string{
		"pseudo-header":          {":path", "/x"},
		"upper-case name":        {"X-Upper", "v"},
		"connection header":      {"connection", "close"},
		"te other than trailers": {"te", "gzip"},
		// One indexed field repeated: a small block decoding to far
		// more than max_request_headers_kb.
		"larger than the head limit": bigTrailers(),
	}
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	n := uint64(0)
	for name, fields := range tests {
		t.Run(name, func(t *testing.T) {
			c := dialH2(t, f.addr)
			id := c.open(false, requestHead("POST", "/len")...)
			c.sendData(id, []byte("abc"), false)
			c.headers(id, true, fields...)
			c.wantGoAway(http2.ErrCodeProtocol)
			n++
			f.waitCounter(t, "http2.rx_messaging_error", n)
		})
	}
}

// bigTrailers is one 1000-byte field 200 times.
func bigTrailers() []string {
	var fields []string
	for range 200 {
		fields = append(fields, "x-big", strings.Repeat("v", 1000))
	}
	return fields
}

// TestH2GracefulClose closes the manager, or drains the listener, while a
// stream waits for its upstream: the client gets GOAWAY NO_ERROR that
// covers the stream, the stream completes, and the connection closes
// afterwards. Manager.Close sends the GOAWAY at once, as Envoy does when it
// starts draining a listener; a draining listener starts the connection's
// drain sequence with a response (a first GOAWAY, the final one
// drain_timeout later).
func TestH2GracefulClose(t *testing.T) {
	tests := map[string]struct {
		start func(f *h2Fixture, drain *fakeDrain)
		// goAwayFirst: the GOAWAY comes before the in-flight response.
		goAwayFirst bool
	}{
		"Manager.Close": {
			start:       func(f *h2Fixture, _ *fakeDrain) { _ = f.m.Close() },
			goAwayFirst: true,
		},
		"listener draining": {
			start: func(_ *h2Fixture, drain *fakeDrain) { drain.close.Store(true) },
		},
	}
	t.Parallel()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drain := &fakeDrain{}
			f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, drain, func(cfg *hcmv3.HttpConnectionManager) {
				cfg.DrainTimeout = durationpb.New(200 * time.Millisecond)
			})
			c := dialH2(t, f.addr)
			id := c.get("/slow")
			waitSignal(t, f.up.arrived, "the slow request upstream")
			tc.start(f, drain)
			if tc.goAwayFirst {
				c.until("GOAWAY", func() bool { return len(c.goAways) > 0 })
				if c.resp(id).done() {
					t.Fatalf("the stream ended before the upstream answered")
				}
			}
			f.up.releaseSlow()
			c.wantOK(id, "late")
			c.wantGoAway(http2.ErrCodeNo)
			if !tc.goAwayFirst {
				c.until("the final GOAWAY", func() bool { return len(c.goAways) == 2 })
			}
			for _, g := range c.goAways {
				if g.code != http2.ErrCodeNo || g.lastStreamID < id {
					t.Errorf("GOAWAY %v with last stream id %d does not cover the in-flight stream %d", g.code, g.lastStreamID, id)
				}
			}
			c.waitClosed()
		})
	}
}

// TestH2Stats checks the HTTP/2 stats of the connection manager after
// requests on two connections.
func TestH2Stats(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	c.wantOK(c.get("/direct"), "hello direct")
	c.wantOK(c.get("/bytes?n=4"), "0123")
	id := c.open(false, requestHead("POST", "/len")...)
	c.sendData(id, []byte("abc"), true)
	c.wantOK(id, lenBody([]byte("abc")))
	c2 := dialH2(t, f.addr)
	c2.wantOK(c2.get("/direct"), "hello direct")
	want := map[string]uint64{
		"http.test.downstream_cx_total":       2,
		"http.test.downstream_cx_http2_total": 2,
		"http.test.downstream_cx_http1_total": 0,
		"http.test.downstream_rq_total":       4,
		"http.test.downstream_rq_http2_total": 4,
		"http.test.downstream_rq_http1_total": 0,
		"http.test.downstream_rq_2xx":         4,
		"http.test.rq_direct_response":        2,
	}
	for name, v := range want {
		f.waitCounter(t, name, v)
	}
	if got := f.gauge("http.test.downstream_cx_http2_active"); got != 2 {
		t.Errorf("downstream_cx_http2_active = %d with two open connections, want 2", got)
	}
}

// FuzzH2Frames feeds arbitrary bytes to the HTTP/2 server over loopback,
// after a valid preface and SETTINGS: whatever they are, the server must
// neither crash nor keep the connection once the client has closed it, and
// must go on serving new connections. The seeds avoid connection errors,
// after which net/http's server lingers for a second; fuzzing finds those.
func FuzzH2Frames(f *testing.F) {
	get := hpackBlock(requestHead("GET", "/direct")...)
	for _, seed := range [][]byte{
		frameBytes(http2.FrameHeaders, 0x5, 1, get),
		slices.Concat(
			frameBytes(http2.FrameHeaders, 0x4, 1, hpackBlock(requestHead("POST", "/direct", "content-length", "3")...)),
			frameBytes(http2.FrameData, 0x1, 1, []byte("abc"))),
		slices.Concat(frameBytes(http2.FrameHeaders, 0x4, 1, get), frameBytes(http2.FrameRSTStream, 0, 1, []byte{0, 0, 0, 8})),
		frameBytes(http2.FramePing, 0, 0, []byte("12345678")),
		frameBytes(http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0x10, 0}),
		frameBytes(http2.FrameSettings, 0, 0, []byte{0, 4, 0, 0, 0, 100}),
		[]byte("\x00\xff\xff\x00garbage"),
	} {
		f.Add(seed)
	}
	st := stats.NewStore()
	m, err := New(hcm(routeConfig(directRoute("/direct", 200, "hi"))), Deps{Log: logr.Discard(), Stats: st, Extensions: builtin.Registry()})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { m.HandleConn(c) })
		}
	})
	f.Cleanup(func() {
		_ = ln.Close()
		_ = m.Close()
		wg.Wait()
	})
	active := st.Gauge("http.test.downstream_cx_active")
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.DialTimeout("tcp", ln.Addr().String(), h2ReadTimeout)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(h2ReadTimeout))
		in := append([]byte(http2.ClientPreface), frameBytes(http2.FrameSettings, 0, 0, nil)...)
		_, _ = nc.Write(append(in, data...))
		_ = nc.Close()
		eventually(t, "the server to let go of a connection whose client left", func() bool { return active.Value() == 0 })
		c := dialH2(t, ln.Addr().String())
		c.wantOK(c.get("/direct"), "hi")
		_ = c.nc.Close()
	})
}

// hpackBlock encodes a header block (name, value pairs) for a seed.
func hpackBlock(fields ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

// frameBytes encodes one frame by hand, valid or not.
func frameBytes(typ http2.FrameType, flags http2.Flags, stream uint32, payload []byte) []byte {
	n := len(payload)
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), byte(typ), byte(flags),
		byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
	return append(b, payload...)
}
