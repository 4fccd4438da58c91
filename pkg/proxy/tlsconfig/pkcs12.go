package tlsconfig

import (
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"software.sslmate.com/src/go-pkcs12"
)

// loadPKCS12 reads a tls_certificates entry given as pkcs12: the leaf,
// its chain and its key in one DER PKCS#12 file (as openssl pkcs12
// -export writes it), unprotected with password (nil: the empty one).
// As in Envoy, pkcs12 excludes certificate_chain, private_key and
// private_key_provider. Errors name the field below the TlsCertificate.
func loadPKCS12(tc *tlsv3.TlsCertificate, password []byte) (tls.Certificate, error) {
	var errs []error
	if tc.GetCertificateChain() != nil {
		errs = append(errs, errors.New("pkcs12: Certificate configuration can't have both pkcs12 and certificate_chain"))
	}
	if tc.GetPrivateKey() != nil {
		errs = append(errs, errors.New("pkcs12: Certificate configuration can't have both pkcs12 and private_key"))
	}
	if tc.GetPrivateKeyProvider() != nil {
		errs = append(errs, errors.New("pkcs12: Certificate configuration can't have both pkcs12 and private_key_provider"))
	}
	if err := errors.Join(errs...); err != nil {
		return tls.Certificate{}, err
	}
	data, from, err := readSource(tc.GetPkcs12())
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pkcs12.%w", err)
	}
	key, leaf, cas, err := pkcs12.DecodeChain(data, string(password))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pkcs12: Failed to load pkcs12 from %s: %w", from, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("pkcs12: %s: unsupported key type %T", from, key)
	}
	if !publicKeyMatches(leaf.PublicKey, signer) {
		return tls.Certificate{}, fmt.Errorf("pkcs12: %s: the key does not match the certificate", from)
	}
	cert := tls.Certificate{PrivateKey: signer, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for _, c := range cas {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// certificatePath is where a tls_certificates entry's certificate comes
// from, for /certs: its pkcs12 or its certificate_chain.
func certificatePath(tc *tlsv3.TlsCertificate) string {
	if ds := tc.GetPkcs12(); ds != nil {
		return sourcePath(ds)
	}
	return sourcePath(tc.GetCertificateChain())
}
