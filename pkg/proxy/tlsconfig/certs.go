package tlsconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// WatchedOutsideSDS refuses a watched_directory in a context or static
// secret: Envoy follows it only in secrets delivered by SDS, so here it
// would change nothing.
const WatchedOutsideSDS = "Envoy follows a watched directory only in a secret delivered by SDS (sds_config); " +
	"here the files are read once and never reloaded. Deliver the secret from a file " +
	"(sds_config.path_config_source) to have the directory followed"

// loadCertificate reads one tls_certificates entry: its chain (leaf
// first) and the leaf's private key, which must match. Errors name the
// field below the TlsCertificate and the file.
func loadCertificate(tc *tlsv3.TlsCertificate) (tls.Certificate, error) {
	var (
		errs     []error
		password []byte
	)
	if ds := tc.GetPassword(); ds != nil {
		p, _, err := readSource(ds)
		if err != nil {
			errs = append(errs, fmt.Errorf("password.%w", err))
		}
		password = p
	}
	if tc.GetWatchedDirectory() != nil {
		errs = append(errs, errors.New("watched_directory: "+WatchedOutsideSDS))
	}
	if tc.GetPkcs12() != nil {
		if err := errors.Join(errs...); err != nil {
			return tls.Certificate{}, err
		}
		return loadPKCS12(tc, password)
	}
	if tc.GetCertificateChain() == nil {
		errs = append(errs, errors.New("certificate_chain: required"))
	}
	if tc.GetPrivateKey() == nil {
		errs = append(errs, errors.New("private_key: required"))
	}
	if err := errors.Join(errs...); err != nil {
		return tls.Certificate{}, err
	}
	chainPEM, chainFrom, err := readSource(tc.GetCertificateChain())
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate_chain.%w", err)
	}
	chain, err := ParseCertificates(chainPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certificate_chain: %s: %w", chainFrom, err)
	}
	keyPEM, keyFrom, err := readSource(tc.GetPrivateKey())
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("private_key.%w", err)
	}
	key, err := parsePrivateKey(keyPEM, password)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("private_key: %s: %w", keyFrom, err)
	}
	if !publicKeyMatches(chain[0].PublicKey, key) {
		return tls.Certificate{}, fmt.Errorf("private_key: the key in %s does not match the certificate in %s", keyFrom, chainFrom)
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// ParseCertificates reads the PEM CERTIFICATE blocks of data, in order.
// Text between blocks is allowed (as OpenSSL allows comments); any other
// kind of block, a certificate that does not parse, or no certificate at
// all is an error.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	return parseBlocks(data, "CERTIFICATE", "certificate", x509.ParseCertificate)
}

// parseBlocks reads the PEM blocks of data, which must all be of type typ
// (what names one in errors), with parse, in order; there must be one at
// least.
func parseBlocks[T any](data []byte, typ, what string, parse func([]byte) (T, error)) ([]T, error) {
	var out []T
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != typ {
			return nil, fmt.Errorf("unexpected PEM block %q (want %s)", b.Type, typ)
		}
		v, err := parse(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, len(out)+1, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM %s found", what)
	}
	return out, nil
}

// ParsePrivateKey reads the first PEM private key of data: PKCS#8
// ("PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY").
// EC parameter blocks ahead of it are skipped, as openssl ecparam writes
// them. Encrypted keys are refused.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	return parsePrivateKey(data, nil)
}

// parsePrivateKey is ParsePrivateKey with a TlsCertificate's password
// (nil: none), which decrypts a key in the legacy PEM encryption
// ("Proc-Type: 4,ENCRYPTED", as openssl writes with -aes256 and the
// traditional format). As with BoringSSL, a password is no error for a
// key that is not encrypted. Encrypted PKCS#8 ("ENCRYPTED PRIVATE KEY",
// as openssl pkcs8 -topk8 and openssl genpkey with a cipher write) is
// decrypted too: see decryptPKCS8.
func parsePrivateKey(data, password []byte) (crypto.Signer, error) {
	return parsePrivateKeyLimited(data, password, defaultPKCS8Limits())
}

// parsePrivateKeyLimited is parsePrivateKey with the bounds on the work
// an encrypted PKCS#8 key's derivation may ask for (the fuzz test uses
// small ones).
func parsePrivateKeyLimited(data, password []byte, limits pkcs8Limits) (crypto.Signer, error) {
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM private key found")
		}
		der := b.Bytes
		if b.Type == "ENCRYPTED PRIVATE KEY" {
			if password == nil {
				return nil, errors.New("the private key is encrypted (ENCRYPTED PRIVATE KEY) and no password is configured")
			}
			plain, err := decryptPKCS8(der, password, limits)
			if err != nil {
				return nil, fmt.Errorf("ENCRYPTED PRIVATE KEY: %w", err)
			}
			k, err := x509.ParsePKCS8PrivateKey(plain)
			if err != nil {
				// A wrong password passes the padding check about once in
				// 256 tries; what it decrypts to is then no key.
				return nil, errors.New("ENCRYPTED PRIVATE KEY: " + errWrongPassword)
			}
			return asSigner(b.Type, k)
		}
		//lint:ignore SA1019 the legacy PEM encryption is what Envoy configurations with a password use; nothing newer in the standard library reads it
		decrypted := x509.IsEncryptedPEMBlock(b)
		if decrypted {
			if password == nil {
				return nil, errors.New("the private key is encrypted and no password is configured")
			}
			var err error
			//lint:ignore SA1019 see above
			if der, err = x509.DecryptPEMBlock(b, password); err != nil {
				return nil, fmt.Errorf("cannot decrypt the private key with the password: %w", err)
			}
		}
		var (
			k   any
			err error
		)
		switch b.Type {
		case "EC PARAMETERS":
			continue
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(der)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(der)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(der)
		default:
			return nil, fmt.Errorf("unexpected PEM block %q (want a private key)", b.Type)
		}
		if err != nil && decrypted {
			// As with PKCS#8 above: a wrong password passes the padding
			// check about once in 256 tries, and the result is no key.
			return nil, errors.New(errWrongPassword)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Type, err)
		}
		return asSigner(b.Type, k)
	}
}

// asSigner returns the key k read from a PEM block of type typ as a
// crypto.Signer, or an error naming its type.
func asSigner(typ string, k any) (crypto.Signer, error) {
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported key type %T", typ, k)
	}
	return s, nil
}

// publicKeyMatches reports whether key is the private half of pub.
func publicKeyMatches(pub any, key crypto.Signer) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch key.Public().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		e, ok := key.Public().(equaler)
		return ok && e.Equal(pub)
	}
	return false
}
