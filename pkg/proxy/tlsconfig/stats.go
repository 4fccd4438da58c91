package tlsconfig

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stats are Envoy's ssl.* stats of a TLS context's owner (a listener's
// "listener.<address>.ssl."): handshakes, their failures by cause, and
// per negotiated cipher, version and curve.
type Stats struct {
	handshake, connectionError, sessionReused    *stats.Counter
	noCertificate                                *stats.Counter
	failNoCert, failError, failSAN, failCertHash *stats.Counter
	// scope makes fail_no_sni_match on first use: only listeners with
	// require_sni ever have it.
	scope stats.Scope
	// OCSP stapling: handshakes whose client asked for a staple, and
	// whether it got one, went without, or failed for want of one.
	ocspRequests, ocspResponses, ocspOmitted, ocspFailed *stats.Counter
	// ciphers, versions and curves count the negotiated parameters.
	ciphers, versions, curves *negotiated
}

// negotiated are the counters of one negotiated parameter of handshakes
// (ssl.ciphers.<name>, ssl.versions.<v>, ssl.curves.<c>). Each is created
// on first use, as Envoy creates them, and kept: a handshake then neither
// builds a stat name nor takes the store's lock to look one up.
type negotiated struct {
	scope  stats.Scope
	prefix string
	// names and slots are per parameter ID; they are filled when the
	// stats are made and only read after, so handshakes read them
	// without a lock; a slot holds its counter once created.
	names map[uint16]string
	slots map[uint16]*atomic.Pointer[stats.Counter]
}

func newNegotiated(scope stats.Scope, prefix string, names map[uint16]string) *negotiated {
	n := &negotiated{scope: scope, prefix: prefix, names: names, slots: make(map[uint16]*atomic.Pointer[stats.Counter], len(names))}
	for id := range names {
		n.slots[id] = new(atomic.Pointer[stats.Counter])
	}
	return n
}

// inc counts one handshake that negotiated id; an ID without a name
// counts nothing.
func (n *negotiated) inc(id uint16) {
	slot := n.slots[id]
	if slot == nil {
		return
	}
	c := slot.Load()
	if c == nil {
		// Two first handshakes at once both look the name up, and get
		// the same counter.
		c = n.scope.Counter(n.prefix + n.names[id])
		slot.Store(c)
	}
	c.Inc()
}

// NewStats creates the stats under scope (which ends with "ssl.").
func NewStats(scope stats.Scope) *Stats {
	return &Stats{
		handshake:       scope.Counter("handshake"),
		connectionError: scope.Counter("connection_error"),
		sessionReused:   scope.Counter("session_reused"),
		noCertificate:   scope.Counter("no_certificate"),
		failNoCert:      scope.Counter("fail_verify_no_cert"),
		failError:       scope.Counter("fail_verify_error"),
		failSAN:         scope.Counter("fail_verify_san"),
		failCertHash:    scope.Counter("fail_verify_cert_hash"),
		scope:           scope,
		ocspRequests:    scope.Counter("ocsp_staple_requests"),
		ocspResponses:   scope.Counter("ocsp_staple_responses"),
		ocspOmitted:     scope.Counter("ocsp_staple_omitted"),
		ocspFailed:      scope.Counter("ocsp_staple_failed"),
		ciphers:         newNegotiated(scope, "ciphers.", cipherName),
		versions:        newNegotiated(scope, "versions.", versionNames),
		curves:          newNegotiated(scope, "curves.", curveNames),
	}
}

// noSNIMatch counts a handshake that require_sni refused (the failure
// itself is counted by failed, as connection_error).
func (s *Stats) noSNIMatch() {
	if s != nil {
		s.scope.Counter("fail_no_sni_match").Inc()
	}
}

// ocsp counts what a handshake did about OCSP stapling.
func (s *Stats) ocsp(a ocspAction) {
	if s == nil || a == ocspNotAsked {
		return
	}
	s.ocspRequests.Inc()
	switch a {
	case ocspStapled:
		s.ocspResponses.Inc()
	case ocspOmitted:
		s.ocspOmitted.Inc()
	case ocspFailed:
		s.ocspFailed.Inc()
	}
}

// noClientCert is how crypto/tls says that a client sent no certificate
// where one is required; it has no error value of its own.
const noClientCert = "client didn't provide a certificate"

// succeeded counts a completed handshake. The per-cipher, version and
// curve counters are created on first use, as Envoy creates them.
func (s *Stats) succeeded(cs tls.ConnectionState) {
	if s == nil {
		return
	}
	s.handshake.Inc()
	if cs.DidResume {
		s.sessionReused.Inc()
	}
	if len(cs.PeerCertificates) == 0 {
		s.noCertificate.Inc()
	}
	s.ciphers.inc(cs.CipherSuite)
	s.versions.inc(cs.Version)
	s.curves.inc(uint16(cs.CurveID))
}

// failed counts a failed handshake: connection_error, and the
// verification failure's own counter. A peer that goes away (or a
// timeout) before finishing is not a TLS error.
func (s *Stats) failed(err error) {
	if s == nil || errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return
	}
	s.connectionError.Inc()
	var ve *VerifyError
	if !errors.As(err, &ve) {
		if strings.Contains(err.Error(), noClientCert) {
			s.failNoCert.Inc()
		}
		return
	}
	s.verifyFailed(ve)
}

// verifyFailed counts a verification failure's own counter.
func (s *Stats) verifyFailed(ve *VerifyError) {
	switch ve.Reason {
	case FailNoCert:
		s.failNoCert.Inc()
	case FailError:
		s.failError.Inc()
	case FailSAN:
		s.failSAN.Inc()
	case FailCertHash:
		s.failCertHash.Inc()
	}
}

// CipherName is BoringSSL's name of a cipher suite (as Envoy's stats and
// %DOWNSTREAM_TLS_CIPHER% show it), or "" for one Outrigger does not
// negotiate.
func CipherName(id uint16) string { return cipherName[id] }

// VersionName is the name of a protocol version as Envoy shows it
// ("TLSv1.3"), or "".
func VersionName(v uint16) string { return versionName(v) }
