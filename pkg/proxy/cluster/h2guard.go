package cluster

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// The HTTP/2 flood limits of upstream connections
// (http2_protocol_options of a cluster), with Envoy's defaults. The
// transport (Go's) writes every frame before it reads the next, so frames
// never queue for an upstream that does not read: the outbound limits
// hold by construction, and only the inbound ones need counting.
const (
	defaultH2MaxEmptyFrames         = 1
	defaultH2MaxPriorityPerStream   = 100
	defaultH2MaxWindowUpdatePerData = 10
)

// h2Limits are a cluster's inbound HTTP/2 flood limits.
type h2Limits struct {
	maxEmptyFrames         uint32
	maxPriorityPerStream   uint32
	maxWindowUpdatePerData uint32

	// The stream and window settings of upstream connections:
	// max_concurrent_streams (0: the server's), and the receive windows
	// (0: the transport's defaults).
	maxStreams   uint32
	streamWindow int
	connWindow   int

	// connection_keepalive: a PING after pingInterval without a frame
	// from the server, the connection closed when its answer takes
	// pingTimeout (0: no PINGs).
	pingInterval, pingTimeout time.Duration

	// hpackTableSize is hpack_table_size: the SETTINGS_HEADER_TABLE_SIZE
	// announced and the bound on the encoder's table (0: HPACK's 4096).
	hpackTableSize int
}

// readH2Limits reads the limits of http2_protocol_options (nil: the
// defaults).
func readH2Limits(o *corev3.Http2ProtocolOptions) h2Limits {
	return h2Limits{
		maxEmptyFrames:         orDefault(o.GetMaxConsecutiveInboundFramesWithEmptyPayload(), defaultH2MaxEmptyFrames),
		maxPriorityPerStream:   orDefault(o.GetMaxInboundPriorityFramesPerStream(), defaultH2MaxPriorityPerStream),
		maxWindowUpdatePerData: orDefault(o.GetMaxInboundWindowUpdateFramesPerDataFrameSent(), defaultH2MaxWindowUpdatePerData),
		maxStreams:             orDefault(o.GetMaxConcurrentStreams(), 0),
		streamWindow:           receiveWindow(o.GetInitialStreamWindowSize()),
		connWindow:             receiveWindow(o.GetInitialConnectionWindowSize()),
		pingInterval:           o.GetConnectionKeepalive().GetInterval().AsDuration(),
		pingTimeout:            o.GetConnectionKeepalive().GetTimeout().AsDuration(),
		hpackTableSize:         int(o.GetHpackTableSize().GetValue()),
	}
}

// h2UpstreamStats are Envoy's HTTP/2 codec stats of a cluster
// ("cluster.<name>.http2."), created with its first HTTP/2 connection as
// Envoy does. Only the floods are counted here; the outbound ones cannot
// happen (see above) and stay at zero.
type h2UpstreamStats struct {
	keepaliveTimeout               *stats.Counter
	inboundEmptyFramesFlood        *stats.Counter
	inboundPriorityFramesFlood     *stats.Counter
	inboundWindowUpdateFramesFlood *stats.Counter
}

func newH2UpstreamStats(scope stats.Scope) *h2UpstreamStats {
	sc := scope.Scope("http2.")
	sc.Counter("outbound_flood")
	sc.Counter("outbound_control_flood")
	return &h2UpstreamStats{
		keepaliveTimeout:               sc.Counter("keepalive_timeout"),
		inboundEmptyFramesFlood:        sc.Counter("inbound_empty_frames_flood"),
		inboundPriorityFramesFlood:     sc.Counter("inbound_priority_frames_flood"),
		inboundWindowUpdateFramesFlood: sc.Counter("inbound_window_update_frames_flood"),
	}
}

// errUpstreamFlood ends an upstream connection whose server crossed a
// flood limit.
var errUpstreamFlood = errors.New("http/2 upstream flood: the connection is closed")

// h2GuardConn watches the frames of an upstream HTTP/2 connection as the
// transport reads and writes them, and ends the connection when the server
// floods it: the next read fails, and a GOAWAY ENHANCE_YOUR_CALM goes out
// when the transport is between frames.
type h2GuardConn struct {
	net.Conn
	lim   *h2Limits
	stats *h2UpstreamStats

	// The read side, the transport's reader's own: its scanner and
	// counts.
	in        frameScanner
	emptyRun  uint32
	streams   uint64 // response header blocks received
	priority  uint64
	winUpdate uint64

	// wmu serialises writes and the write side's scanner. It is never
	// waited for by the reader, which must not stop reading because a
	// write is blocked.
	wmu      sync.Mutex
	out      frameScanner
	dataSent atomic.Uint64 // DATA frames written
	failed   atomic.Bool
	// goneAway is closed once the GOAWAY of a flood was written (or
	// could not be); set before failed, and read only once failed is.
	goneAway chan struct{}
	// pingSent is when the transport's keepalive PING now unanswered
	// went out (Unix nanoseconds, 0 for none): a close after pingTimeout
	// is the keepalive's.
	pingSent atomic.Int64
	// streamStats follows the connection's streams for the cluster's stats
	// (see h2streamstats.go); unused until track is called.
	streamStats h2StreamStats
}

// newH2GuardConn wraps an upstream connection; the transport writes the
// client preface first.
func newH2GuardConn(c net.Conn, lim *h2Limits, st *h2UpstreamStats) *h2GuardConn {
	g := &h2GuardConn{Conn: c, lim: lim, stats: st}
	g.out.skip = len(clientPreface)
	return g
}

// clientPreface is what an HTTP/2 client sends before its first frame.
const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Read reads from the server and checks the frames it completes.
func (g *h2GuardConn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if n > 0 {
		if ferr := g.in.scan(p[:n], g.inbound); ferr != nil {
			return 0, ferr
		}
	}
	if err != nil {
		g.streamStats.ended()
	}
	return n, err
}

// Write writes to the server and counts the DATA frames sent. A write
// that fails part way leaves the scanner out of step, which no longer
// matters: the transport drops the connection.
func (g *h2GuardConn) Write(p []byte) (int, error) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if g.failed.Load() {
		return 0, errUpstreamFlood
	}
	// The frames are counted before they go: the server's
	// WINDOW_UPDATEs for them may be read before this write returns.
	_ = g.out.scan(p, func(h frameHead) error {
		switch {
		case h.typ == frameTypeData:
			g.dataSent.Add(1)
		case h.typ == frameTypePing && h.flags&flagAck == 0:
			g.pingSent.CompareAndSwap(0, time.Now().UnixNano())
		}
		g.streamStats.outbound(h)
		return nil
	})
	return g.Conn.Write(p)
}

// inbound accounts for one frame from the server (Envoy's formulas, as
// for downstream connections).
func (g *h2GuardConn) inbound(h frameHead) error {
	if g.failed.Load() {
		return errUpstreamFlood
	}
	g.streamStats.inbound(h)
	switch h.typ {
	case frameTypePing:
		if h.flags&flagAck != 0 {
			g.pingSent.Store(0)
		}
		return nil
	case frameTypeHeaders, frameTypeContinuation:
		if h.flags&flagEndHeaders != 0 {
			g.streams++
		}
		g.trackEmpty(h)
	case frameTypeData:
		g.trackEmpty(h)
	case frameTypePriority:
		g.priority++
	case frameTypeWindowUpdate:
		g.winUpdate++
	default:
		return nil
	}
	switch {
	case g.emptyRun > g.lim.maxEmptyFrames:
		g.stats.inboundEmptyFramesFlood.Inc()
	case g.priority > uint64(g.lim.maxPriorityPerStream)*(1+g.streams):
		g.stats.inboundPriorityFramesFlood.Inc()
	case g.winUpdate > 1+2*(g.streams+uint64(g.lim.maxWindowUpdatePerData)*g.dataSent.Load()):
		g.stats.inboundWindowUpdateFramesFlood.Inc()
	default:
		return nil
	}
	// The GOAWAY goes out after the write under way, if any, and only
	// if that leaves the transport between frames; the reader does not
	// wait for it, and the write under way gets a second at most.
	_ = g.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	done := make(chan struct{})
	g.goneAway = done // published by the store of failed
	g.failed.Store(true)
	go func() {
		defer close(done)
		g.wmu.Lock()
		defer g.wmu.Unlock()
		if g.out.atBoundary() {
			_, _ = g.Conn.Write(goAwayEnhanceYourCalm)
		}
		_ = g.Conn.Close()
	}()
	return errUpstreamFlood
}

// Close closes the connection, after the GOAWAY of a flood when there is
// one (a second at most).
func (g *h2GuardConn) Close() error {
	if g.failed.Load() && g.goneAway != nil {
		<-g.goneAway
	}
	// The transport closes a connection whose keepalive PING went
	// unanswered for pingTimeout; nothing else makes it close with a PING
	// that old outstanding. The margin covers its timer's lateness the
	// other way.
	// Swap: the transport may close a connection more than once.
	if t := g.pingSent.Swap(0); t != 0 && g.lim.pingTimeout > 0 &&
		time.Since(time.Unix(0, t)) >= g.lim.pingTimeout*9/10 {
		g.stats.keepaliveTimeout.Inc()
	}
	g.streamStats.ended()
	return g.Conn.Close()
}

// trackEmpty counts a run of frames that carry nothing and do not end
// their stream.
func (g *h2GuardConn) trackEmpty(h frameHead) {
	if h.payload == 0 && h.flags&flagEndStream == 0 {
		g.emptyRun++
		return
	}
	g.emptyRun = 0
}

// goAwayEnhanceYourCalm is a GOAWAY frame with last stream 0 and
// ENHANCE_YOUR_CALM.
var goAwayEnhanceYourCalm = []byte{0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb}

// HTTP/2 frame types and flags the guard reads (RFC 9113 §6).
const (
	frameTypeData         = 0x0
	frameTypeHeaders      = 0x1
	frameTypePriority     = 0x2
	frameTypeRSTStream    = 0x3
	frameTypePing         = 0x6
	frameTypeGoAway       = 0x7
	frameTypeWindowUpdate = 0x8
	frameTypeContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1 // on PING and SETTINGS
	flagEndHeaders = 0x4
	flagPadded     = 0x8
)

// frameHead is a frame's header, with its payload length less padding,
// and the error code of an RST_STREAM or GOAWAY.
type frameHead struct {
	typ, flags uint8
	length     uint32
	payload    int
	stream     uint32
	code       uint32
}

// frameScanner finds the frame headers in a byte stream fed to it in
// pieces of any size.
type frameScanner struct {
	skip    int // bytes to pass over first (the client preface)
	hdr     [9]byte
	have    int    // bytes of hdr filled
	left    uint32 // payload bytes of the current frame still to come
	cur     frameHead
	needPad bool // the current frame is padded and its pad length is next
	// want is how many payload bytes of an RST_STREAM or GOAWAY to
	// gather (into ext, got so far) before the frame is reported with
	// its error code, the last 4 of them.
	want, got int
	ext       [8]byte
}

// atBoundary reports whether the stream is between frames.
func (s *frameScanner) atBoundary() bool {
	return s.skip == 0 && s.have == 0 && s.left == 0 && !s.needPad
}

// scan feeds p to the scanner, calling on for each frame once its header
// (and pad length, for padded DATA and HEADERS) is known.
func (s *frameScanner) scan(p []byte, on func(frameHead) error) error {
	for len(p) > 0 {
		switch {
		case s.skip > 0:
			n := min(s.skip, len(p))
			s.skip -= n
			p = p[n:]
		case s.want > 0:
			n := min(s.want-s.got, len(p))
			copy(s.ext[s.got:], p[:n])
			s.got += n
			s.left -= uint32(n)
			p = p[n:]
			if s.got < s.want {
				return nil
			}
			s.cur.code = binary.BigEndian.Uint32(s.ext[s.want-4 : s.want])
			s.want, s.got = 0, 0
			if err := on(s.cur); err != nil {
				return err
			}
		case s.left > 0 && !s.needPad:
			n := min(int(s.left), len(p))
			s.left -= uint32(n)
			p = p[n:]
		case s.needPad:
			pad := int(p[0])
			s.needPad = false
			s.cur.payload = max(int(s.cur.length)-1-pad, 0)
			if err := on(s.cur); err != nil {
				return err
			}
		default:
			n := copy(s.hdr[s.have:], p)
			s.have += n
			p = p[n:]
			if s.have < len(s.hdr) {
				return nil
			}
			s.have = 0
			length := uint32(s.hdr[0])<<16 | uint32(binary.BigEndian.Uint16(s.hdr[1:3]))
			s.cur = frameHead{typ: s.hdr[3], flags: s.hdr[4], length: length, payload: int(length),
				stream: binary.BigEndian.Uint32(s.hdr[5:9]) &^ (1 << 31)}
			s.left = length
			switch {
			case s.cur.typ == frameTypeRSTStream && length == 4:
				s.want = 4
				continue
			case s.cur.typ == frameTypeGoAway && length >= 8:
				s.want = 8
				continue
			}
			if s.cur.flags&flagPadded != 0 && (s.cur.typ == frameTypeData || s.cur.typ == frameTypeHeaders) && length > 0 {
				s.needPad = true
				continue
			}
			if err := on(s.cur); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxReceiveWindow is the largest receive window Go's HTTP/2 transport
// takes (it ignores larger ones); Envoy allows up to 2^31-1.
const maxReceiveWindow = 4<<20 - 1

// receiveWindow is a configured window size for the transport: 0 when
// unset, larger values lowered to what it takes.
func receiveWindow(v *wrapperspb.UInt32Value) int {
	return min(int(v.GetValue()), maxReceiveWindow)
}

// TLSInfo is the guarded connection's (see trackedConn.TLSInfo).
func (g *h2GuardConn) TLSInfo() *accesslog.TLSInfo { return accesslog.UpstreamTLS(g.Conn) }
