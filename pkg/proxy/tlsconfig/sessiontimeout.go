package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"time"
)

// sessionCreatedTag marks the entry of a session ticket's Extra that
// holds when the session was made (Unix milliseconds, big-endian, after
// the tag).
var sessionCreatedTag = []byte("outrigger.session_created:")

// applySessionTimeout makes session tickets resume sessions for timeout
// only (session_timeout): the session's creation time travels in the
// ticket, and an older ticket is taken for a new handshake, as BoringSSL
// expires the session. A ticket without the time (issued before the
// option, or by another configuration) is not resumed either. A ticket
// issued on a resumed connection starts a new period, as the ages Go
// keeps in its tickets do. now is the clock.
func applySessionTimeout(cfg *tls.Config, timeout time.Duration, now func() time.Time) {
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		if _, ok := sessionCreated(ss); !ok {
			entry := binary.BigEndian.AppendUint64(bytes.Clone(sessionCreatedTag), uint64(now().UnixMilli()))
			ss.Extra = append(ss.Extra, entry)
		}
		return cfg.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := cfg.DecryptTicket(identity, cs)
		if ss == nil || err != nil {
			return ss, err
		}
		created, ok := sessionCreated(ss)
		if !ok || !now().Before(created.Add(timeout)) {
			return nil, nil
		}
		return ss, nil
	}
}

// sessionCreated is the creation time a ticket's session carries, if any.
func sessionCreated(ss *tls.SessionState) (time.Time, bool) {
	for _, e := range ss.Extra {
		if v, ok := bytes.CutPrefix(e, sessionCreatedTag); ok && len(v) == 8 {
			return time.UnixMilli(int64(binary.BigEndian.Uint64(v))), true
		}
	}
	return time.Time{}, false
}
