package tlsconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// signatureSchemeByName maps the signature algorithm names BoringSSL's
// SSL_CTX_set1_sigalgs_list reads (the TLS 1.3 names, and OpenSSL's
// "TYPE+HASH" spellings) to Go's schemes.
var signatureSchemeByName = map[string]tls.SignatureScheme{
	"rsa_pkcs1_sha256":       tls.PKCS1WithSHA256,
	"rsa_pkcs1_sha384":       tls.PKCS1WithSHA384,
	"rsa_pkcs1_sha512":       tls.PKCS1WithSHA512,
	"ecdsa_secp256r1_sha256": tls.ECDSAWithP256AndSHA256,
	"ecdsa_secp384r1_sha384": tls.ECDSAWithP384AndSHA384,
	"ecdsa_secp521r1_sha512": tls.ECDSAWithP521AndSHA512,
	"rsa_pss_rsae_sha256":    tls.PSSWithSHA256,
	"rsa_pss_rsae_sha384":    tls.PSSWithSHA384,
	"rsa_pss_rsae_sha512":    tls.PSSWithSHA512,
	"ed25519":                tls.Ed25519,
	"RSA+SHA256":             tls.PKCS1WithSHA256,
	"RSA+SHA384":             tls.PKCS1WithSHA384,
	"RSA+SHA512":             tls.PKCS1WithSHA512,
	"ECDSA+SHA256":           tls.ECDSAWithP256AndSHA256,
	"ECDSA+SHA384":           tls.ECDSAWithP384AndSHA384,
	"ECDSA+SHA512":           tls.ECDSAWithP521AndSHA512,
	"RSA-PSS+SHA256":         tls.PSSWithSHA256,
	"RSA-PSS+SHA384":         tls.PSSWithSHA384,
	"RSA-PSS+SHA512":         tls.PSSWithSHA512,
	"PSS+SHA256":             tls.PSSWithSHA256,
	"PSS+SHA384":             tls.PSSWithSHA384,
	"PSS+SHA512":             tls.PSSWithSHA512,
}

// sha1SignatureNames are BoringSSL's SHA-1 (and MD5-SHA1) algorithms,
// which Go's crypto/tls no longer signs with (since Go 1.25).
var sha1SignatureNames = map[string]bool{
	"rsa_pkcs1_sha1": true, "ecdsa_sha1": true, "rsa_pkcs1_md5_sha1": true,
	"RSA+SHA1": true, "ECDSA+SHA1": true,
}

// signatureSchemes reads signature_algorithms: each entry a name or a
// colon-separated list of names, as Envoy joins them for BoringSSL.
// Errors name the entry below tls_params.
func signatureSchemes(list []string) ([]tls.SignatureScheme, error) {
	var (
		out  []tls.SignatureScheme
		errs []error
	)
	for i, entry := range list {
		for _, n := range strings.Split(entry, ":") {
			s, ok := signatureSchemeByName[n]
			switch {
			case ok:
				out = append(out, s)
			case sha1SignatureNames[n]:
				errs = append(errs, fmt.Errorf("signature_algorithms[%d]: %q is not supported by Outrigger: Go's crypto/tls does not sign with SHA-1", i, n))
			default:
				errs = append(errs, fmt.Errorf("signature_algorithms[%d]: unknown signature algorithm %q", i, n))
			}
		}
	}
	return out, errors.Join(errs...)
}

// errPeerSignatures refuses signature_algorithms where the peer signs:
// BoringSSL also limits the algorithms it accepts from the peer, which
// Go's crypto/tls has no setting for (it only limits its own signatures,
// tls.Certificate.SupportedSignatureAlgorithms).
func errPeerSignatures(where string) error {
	return fmt.Errorf("signature_algorithms: not supported by Outrigger %s: Envoy also limits the algorithms the peer may sign with, "+
		"which Go's crypto/tls cannot restrict; it is supported on listeners that do not ask for client certificates", where)
}
