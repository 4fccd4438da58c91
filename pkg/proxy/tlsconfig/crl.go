package tlsconfig

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"time"
)

// ParseCRLs reads the PEM "X509 CRL" blocks of data. Text between blocks
// is allowed; any other kind of block, a CRL that does not parse or no
// CRL at all is an error.
func ParseCRLs(data []byte) ([]*x509.RevocationList, error) {
	return parseBlocks(data, "X509 CRL", "CRL", x509.ParseRevocationList)
}

// checkRevocation checks a verified chain (leaf first, root last) against
// the CRLs, as OpenSSL's CRL checks do for Envoy: every certificate but
// the root needs a current CRL from its issuer (only the leaf with
// only_verify_leaf_cert_crl), and must not be on it.
func (v *validator) checkRevocation(chain []*x509.Certificate, now time.Time) error {
	last := len(chain) - 1
	if v.crlLeafOnly {
		last = min(last, 1)
	}
	for i := 0; i < last; i++ {
		cert, issuer := chain[i], chain[i+1]
		crl := v.crlFor(issuer)
		if crl == nil {
			return fmt.Errorf("unable to get certificate CRL for %q", cert.Subject.String())
		}
		if !crl.NextUpdate.IsZero() && now.After(crl.NextUpdate) {
			return fmt.Errorf("CRL of %q has expired", issuer.Subject.String())
		}
		for _, e := range crl.RevokedCertificateEntries {
			if e.SerialNumber.Cmp(cert.SerialNumber) == 0 {
				return fmt.Errorf("certificate %q is revoked", cert.Subject.String())
			}
		}
	}
	return nil
}

// crlFor finds the CRL issued and signed by issuer.
func (v *validator) crlFor(issuer *x509.Certificate) *x509.RevocationList {
	for _, l := range v.crls {
		if bytes.Equal(l.RawIssuer, issuer.RawSubject) && l.CheckSignatureFrom(issuer) == nil {
			return l
		}
	}
	return nil
}
