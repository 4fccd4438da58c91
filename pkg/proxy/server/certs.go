package server

import (
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// Certificates implements admin.CertSource: one entry per TLS context,
// the clusters' (built first, as in Envoy) then the listeners' filter
// chains'.
func (s *Server) Certificates() *adminv3.Certificates {
	out := &adminv3.Certificates{}
	now := s.now()
	for _, c := range s.tlsContexts() {
		out.Certificates = append(out.Certificates, c.Certificates(now))
	}
	return out
}

// tlsContext is a TLS context of a cluster or a filter chain.
type tlsContext interface {
	Certificates(now time.Time) *adminv3.Certificate
	FirstExpiry() time.Time
}

// tlsContexts are the TLS contexts in service: the clusters', then the
// active listeners'.
func (s *Server) tlsContexts() []tlsContext {
	var out []tlsContext
	if s.clusters != nil {
		for _, c := range s.clusters.Clusters() {
			if t := c.TLS(); t != nil {
				out = append(out, t)
			}
		}
	}
	for _, bl := range s.activeListeners() {
		for _, t := range bl.TLSContexts() {
			out = append(out, t)
		}
	}
	return out
}

// secondsUntilFirstOCSPExpiring is server.seconds_until_first_ocsp_response_expiring:
// the seconds until the soonest stapled OCSP response of any listener
// expires; false without any, when Envoy leaves the gauge as it is.
func (s *Server) secondsUntilFirstOCSPExpiring() (int64, bool) {
	var (
		first uint64
		found bool
	)
	now := s.now()
	for _, bl := range s.activeListeners() {
		for _, t := range bl.TLSContexts() {
			if secs, ok := t.SecondsUntilFirstOCSPExpiry(now); ok && (!found || secs < first) {
				first, found = secs, true
			}
		}
	}
	return int64(first), found
}

// daysUntilFirstCertExpiring is server.days_until_first_cert_expiring:
// the whole days until the soonest certificate of any context expires, 0
// without certificates (as in current Envoy).
func (s *Server) daysUntilFirstCertExpiring() int64 {
	var first time.Time
	for _, c := range s.tlsContexts() {
		if e := c.FirstExpiry(); !e.IsZero() && (first.IsZero() || e.Before(first)) {
			first = e
		}
	}
	if first.IsZero() {
		return 0
	}
	return int64(tlsconfig.DaysUntil(first, s.now()))
}
