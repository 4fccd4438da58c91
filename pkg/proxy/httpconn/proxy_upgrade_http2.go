package httpconn

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// upgradeHTTP2 carries an upgrade (or a forwarded CONNECT) to an HTTP/2
// cluster, as Envoy's HTTP/2 client codec does: an Upgrade goes as an RFC
// 8441 extended CONNECT (:protocol set to the Upgrade value, its
// Connection and Upgrade headers dropped), a CONNECT as a CONNECT with
// only :authority. The upstream's 200 (any 2xx for a CONNECT) opens the
// tunnel; it reaches an HTTP/1.1 client of an Upgrade as 101 Switching
// Protocols with upgrade and connection: upgrade, and an HTTP/2 client as
// 200. Any other answer is relayed as a response. The route timeout covers
// the wait for the answer's head; the tunnel then runs under the stream
// idle timeout, its bytes in the stream's DATA frames both ways.
func (s *stream) upgradeHTTP2(cl UpstreamCluster, host *upstream.Host) {
	// The stream's maximum durations, the cluster's counted from here,
	// bound the whole exchange, tunnel included; an HTTP/2 client's reset
	// ends it too.
	s.startUpstreamDuration(cl)
	ctx, cancel := s.withAutoSNI(s.upstreamBase(), cl), context.CancelFunc(nil)
	if d := s.durationLimit(); !d.IsZero() {
		ctx, cancel = context.WithDeadline(ctx, d)
	} else if s.conn == nil {
		ctx, cancel = context.WithCancel(ctx)
	}
	if cancel != nil {
		s.armReset(cancel)
		defer func() {
			s.disarmReset()
			cancel()
		}()
	}
	sent := time.Now()
	st, err := upstream.OpenH2Stream(ctx, cl, host, s.upgradeRequestHTTP2(), s.rqTimeout)
	if err != nil {
		if !s.peerReset.Load() && s.maxDurationReached(time.Now()) {
			return
		}
		s.h2UpstreamFailed(cl, ctx, err)
		return
	}
	defer func() { _ = st.Close() }()
	s.outlierConnected()
	if s.m.uplog != nil {
		s.poolReadyLog()
	}
	resp := st.Resp
	ok := resp.StatusCode == http.StatusOK
	if s.upg.connect {
		ok = resp.StatusCode >= 200 && resp.StatusCode < 300
	}
	if !ok {
		s.relayHTTP2(cl, ctx, resp, sent, nil)
		return
	}
	now := time.Now()
	s.tLast = now
	s.entry.FirstUpstreamByte = s.m.stamp(now)
	s.status = resp.StatusCode
	s.details = "via_upstream"
	s.copyHTTP2ResponseHeaders(resp)
	s.outlierResponse()
	// What the router sees, and counts, is the answer as Envoy's codec
	// turns it back into the HTTP/1.1 form of the switch: 101.
	upstreamStatus := s.status
	if !s.upg.connect {
		upstreamStatus = 101
		if !s.upg.extended {
			s.status = 101
			s.respHeaders.Set("upgrade", s.upg.value)
			s.respHeaders.Set("connection", "upgrade")
		}
	}
	s.setServiceTime(now.Sub(sent))
	s.mutateUpgradeResponse()
	cs := cl.Stats()
	s.chargeCode(cs, upstreamStatus)
	s.chargeTime(cs, now.Sub(sent))
	if !s.openTunnel() {
		return
	}
	side := newH2UpstreamSide(st)
	defer side.Close()
	s.runTunnel(tunnelEnd{r: side, w: st, conn: side})
}

// upgradeRequestHTTP2 builds the extended CONNECT (or CONNECT) the HTTP/2
// pool sends for the stream. Its body, the tunnel's upstream direction,
// is OpenH2Stream's.
func (s *stream) upgradeRequestHTTP2() *http.Request {
	authority := strings.Clone(s.upAuthority)
	req := &http.Request{
		Method: http.MethodConnect,
		Host:   authority,
		Header: s.upstreamHeader(1),
	}
	if s.upg.connect {
		// Only :method and :authority (RFC 9113 §8.5).
		req.URL = &url.URL{Host: authority}
		return req
	}
	req.URL = s.upstreamURL()
	req.Header[":protocol"] = []string{strings.Clone(s.upg.value)}
	return req
}

// h2UpstreamSide is an HTTP/2 upstream stream as one side of a tunnel. The
// tunnel measures idleness with read deadlines, which a response body has
// not: a goroutine reads the body one piece at a time (the tunnel's
// buffer size, so back-pressure holds) and Read waits for the next piece
// until the deadline.
type h2UpstreamSide struct {
	st *upstream.H2Stream
	// pieces carries what each body read returned; taken tells the
	// reader that the last piece was consumed and its buffer is free.
	pieces chan h2Piece
	taken  chan struct{}
	closed chan struct{}
	once   sync.Once

	// Read's state, used by the one goroutine that reads.
	cur []byte
	err error

	mu       sync.Mutex
	deadline time.Time
}

// h2Piece is one read of the response body.
type h2Piece struct {
	b   []byte
	err error
}

// newH2UpstreamSide starts reading st's response body.
func newH2UpstreamSide(st *upstream.H2Stream) *h2UpstreamSide {
	u := &h2UpstreamSide{
		st:     st,
		pieces: make(chan h2Piece),
		taken:  make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	go u.readBody()
	return u
}

// readBody reads the response body until it ends or the side closes.
func (u *h2UpstreamSide) readBody() {
	buf := make([]byte, tunnelBufSize)
	for {
		n, err := u.st.Read(buf)
		select {
		case u.pieces <- h2Piece{b: buf[:n], err: err}:
		case <-u.closed:
			return
		}
		if err != nil {
			return
		}
		select {
		case <-u.taken:
		case <-u.closed:
			return
		}
	}
}

// Read implements io.Reader, failing with os.ErrDeadlineExceeded when no
// byte came before the read deadline.
func (u *h2UpstreamSide) Read(p []byte) (int, error) {
	if len(u.cur) == 0 {
		if u.err != nil {
			return 0, u.err
		}
		u.mu.Lock()
		d := u.deadline
		u.mu.Unlock()
		var expired <-chan time.Time
		if !d.IsZero() {
			t := time.NewTimer(time.Until(d))
			defer t.Stop()
			expired = t.C
		}
		select {
		case pc := <-u.pieces:
			u.cur, u.err = pc.b, pc.err
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-u.closed:
			return 0, errTunnelSideClosed
		}
	}
	n := copy(p, u.cur)
	u.cur = u.cur[n:]
	if len(u.cur) > 0 {
		return n, nil
	}
	if u.err != nil {
		return n, u.err
	}
	u.taken <- struct{}{}
	return n, nil
}

// SetReadDeadline sets the deadline of the next reads.
func (u *h2UpstreamSide) SetReadDeadline(t time.Time) error {
	u.mu.Lock()
	u.deadline = t
	u.mu.Unlock()
	return nil
}

// SetWriteDeadline implements tunnelConn: a write waits for the stream's
// flow-control window; a tunnel that stops is closed by its other
// direction's idle timeout, which ends the write.
func (u *h2UpstreamSide) SetWriteDeadline(time.Time) error { return nil }

// CloseWrite ends the request stream (END_STREAM).
func (u *h2UpstreamSide) CloseWrite() error { return u.st.CloseWrite() }

// Close resets the stream if it is still open and ends the body reader.
func (u *h2UpstreamSide) Close() error {
	u.once.Do(func() { close(u.closed) })
	return u.st.Close()
}

// errTunnelSideClosed: the tunnel side was closed while a read waited.
var errTunnelSideClosed = errors.New("tunnel side closed")

// isPeerReset reports whether an HTTP/2 exchange failed because the
// upstream reset the stream (RST_STREAM), or would have: Go's transport
// reports a reset as a stream error "received from peer", and refuses on
// its own an extended CONNECT to a server that did not announce
// SETTINGS_ENABLE_CONNECT_PROTOCOL, which Envoy sends and such a server
// resets. Neither error type is exported.
func isPeerReset(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "received from peer") || strings.Contains(msg, "extended connect not supported by peer")
}
