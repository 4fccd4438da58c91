package tlsconfig

import (
	"crypto/x509"
	"errors"
)

// errChainTooLong is BoringSSL's X509_V_ERR_CERT_CHAIN_TOO_LONG, which
// Envoy reports when every chain to a trusted CA is deeper than
// max_verify_depth.
var errChainTooLong = errors.New("certificate chain too long")

// withinDepth keeps the verified chains (leaf first, trust anchor last)
// no deeper than max_verify_depth: Envoy's depth counts the trust anchor
// but not the leaf, so depth 1 allows the leaf and one CA certificate.
// A validator without max_verify_depth keeps them all (Envoy's default
// of 100 is above what Go's verifier builds).
func (v *validator) withinDepth(chains [][]*x509.Certificate) ([][]*x509.Certificate, error) {
	if !v.depthLimited {
		return chains, nil
	}
	var kept [][]*x509.Certificate
	for _, c := range chains {
		if len(c)-1 <= v.maxDepth {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil, errChainTooLong
	}
	return kept, nil
}
