package httpconn

import (
	"strings"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// detectUpgrade records the upgrade an HTTP/2 request asks for: an
// extended CONNECT (RFC 8441, :protocol, accepted only with allow_connect)
// stands for an HTTP/1.1 Upgrade to its protocol, and a CONNECT is the
// CONNECT upgrade. It reports whether the request is an extended CONNECT.
func (st *h2Stream) detectUpgrade() bool {
	s := &st.s
	switch {
	case st.protocol != "":
		s.upg.typ, s.upg.value, s.upg.connection = st.protocol, st.protocol, "upgrade"
		s.upg.extended = true
		s.upg.connectUDP = strings.EqualFold(st.protocol, router.UpgradeConnectUDP)
		s.upg.headOnly = st.endStream
		return true
	case st.method == "CONNECT":
		s.upg.typ, s.upg.connect = router.UpgradeConnect, true
	}
	return false
}

// h2TunnelSide is an HTTP/2 stream as one side of a tunnel: its request
// DATA frames are read, the response DATA frames written, END_STREAM is
// the half-close and RST_STREAM the abort.
type h2TunnelSide struct {
	st *h2Stream
	// rest is what the last Next returned that Read did not take yet.
	rest []byte
}

// Read implements io.Reader over the request body.
func (t *h2TunnelSide) Read(p []byte) (int, error) {
	if len(t.rest) == 0 {
		b, err := t.st.Next()
		if len(b) == 0 {
			return 0, err
		}
		t.rest = b
	}
	n := copy(p, t.rest)
	t.rest = t.rest[n:]
	return n, nil
}

// Write implements io.Writer: DATA frames, sent at once.
func (t *h2TunnelSide) Write(p []byte) (int, error) {
	if err := t.st.writeBody(p); err != nil {
		return 0, err
	}
	if err := t.st.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetReadDeadline restarts the stream idle timeout Next waits under: the
// tunnel sets it before each read, from its own idle reckoning, so the
// deadline is now plus the stream's idle timeout (the value given is not
// needed).
func (t *h2TunnelSide) SetReadDeadline(time.Time) error {
	st := t.st
	st.h.mu.Lock()
	st.lastActivity = time.Now()
	st.h.mu.Unlock()
	return nil
}

// SetWriteDeadline implements tunnelConn: writes wait for flow-control
// windows under the stream idle timeout on their own.
func (t *h2TunnelSide) SetWriteDeadline(time.Time) error { return nil }

// CloseWrite ends the response stream (END_STREAM).
func (t *h2TunnelSide) CloseWrite() error { return t.st.finish() }

// Close resets the stream, and wakes a read waiting for DATA.
func (t *h2TunnelSide) Close() error {
	st := t.st
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !st.localDone {
		h.appendResetLocked(st.id, errCodeInternal)
		st.localDone = true
		h.kickLocked()
	}
	if st.bodyErr == nil {
		st.bodyErr = errStreamReset
	}
	st.cond.Broadcast()
	return nil
}
