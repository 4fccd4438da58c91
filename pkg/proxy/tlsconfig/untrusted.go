package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// chainCheck is one of the validator's checks of a peer's chain (leaf
// first): verify, or a request's verifyWith or verifySNI.
type chainCheck func([]*x509.Certificate) error

// connectionCheck is check as a tls.Config's VerifyConnection. With
// trust_chain_verification ACCEPT_UNTRUSTED a certificate that fails
// (chain, SAN, pins) does not fail the handshake, as in Envoy's default
// validator: the failure is counted after the handshake (countUntrusted).
// A missing certificate that is required still fails: Envoy asks
// BoringSSL to refuse it before any validator runs.
func (v *validator) connectionCheck(check chainCheck) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		err := check(cs.PeerCertificates)
		if v.acceptUntrusted && untrustedAccepted(err) {
			return nil
		}
		return err
	}
}

// untrustedAccepted reports whether ACCEPT_UNTRUSTED lets the failure err
// through.
func untrustedAccepted(err error) bool {
	var ve *VerifyError
	return errors.As(err, &ve) && ve.Reason != FailNoCert
}

// countUntrusted counts, after a handshake that completed, the
// verification failure that ACCEPT_UNTRUSTED let through (Envoy counts
// ssl.fail_verify_* and lets the connection go on), and reports whether
// there was one; without ACCEPT_UNTRUSTED there is none.
func (v *validator) countUntrusted(check chainCheck, cs tls.ConnectionState, st *Stats) bool {
	if !v.acceptUntrusted || check == nil {
		return false
	}
	var ve *VerifyError
	if err := check(cs.PeerCertificates); errors.As(err, &ve) {
		if st != nil {
			st.verifyFailed(ve)
		}
		return true
	}
	return false
}
