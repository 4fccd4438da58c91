package tlsconfig

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// errKeyUsage is BoringSSL's reason when enforce_rsa_key_usage refuses
// the server's RSA certificate.
var errKeyUsage = errors.New("KEY_USAGE_BIT_INCORRECT: the server's RSA certificate's key usage does not allow the key exchange")

// checkRSAKeyUsage is the key usage check Envoy always makes of a
// server's certificate now (UpstreamTlsContext.enforce_rsa_key_usage is
// deprecated and ignored), BoringSSL's SSL_set_enforce_rsa_key_usage: a
// server certificate with an
// RSA key and a key usage extension must allow digitalSignature when the
// key signs the handshake (TLS 1.3, ECDHE_RSA suites) and keyEncipherment
// when it encrypts the premaster secret (the TLS_RSA_* suites). A
// certificate without the extension, or with another key type, passes.
func checkRSAKeyUsage(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	leaf := cs.PeerCertificates[0]
	if _, ok := leaf.PublicKey.(*rsa.PublicKey); !ok || leaf.KeyUsage == 0 {
		return nil
	}
	want := x509.KeyUsageDigitalSignature
	if cs.Version < tls.VersionTLS13 && rsaKeyExchange(cs.CipherSuite) {
		want = x509.KeyUsageKeyEncipherment
	}
	if leaf.KeyUsage&want == 0 {
		return errKeyUsage
	}
	return nil
}

// rsaKeyExchange reports whether a TLS 1.2 suite encrypts the premaster
// secret with the server's RSA key (no ECDHE).
func rsaKeyExchange(id uint16) bool {
	switch id {
	case tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA,
		tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA256, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA:
		return true
	}
	return false
}

// withKeyUsage adds the key usage check after verify (nil: none).
func withKeyUsage(verify func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return andThen(verify, checkRSAKeyUsage)
}
