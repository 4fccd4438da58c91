package tlsconfig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"slices"
)

// pointFormatUncompressed is the only EC point format Go speaks.
const pointFormatUncompressed = 0

// clientPreferredSuite is the TLS 1.0-1.2 cipher suite that
// prefer_client_ciphers makes BoringSSL choose for hello: the first of
// the client's suites that cfg allows and the handshake can use. Go's
// server always picks by its own preference order, so the caller hands
// Go a config allowing that suite alone. It returns 0 (leave Go's choice
// alone) when the handshake will be TLS 1.3, whose suite this does not
// choose in Envoy either, or when no suite qualifies (Go then fails the
// handshake as it would have).
//
// "Can use" is Go's own test (crypto/tls cipherSuiteOk): an ECDHE suite
// needs a group both sides allow and uncompressed points, and a
// certificate whose key signs for it (ECDSA or Ed25519 for the
// ECDHE-ECDSA suites, RSA for ECDHE-RSA); an RSA key exchange needs an
// RSA key; suites defined by TLS 1.2 need TLS 1.2.
func clientPreferredSuite(hello *tls.ClientHelloInfo, cfg *tls.Config, cert *tls.Certificate) uint16 {
	vers := mutualVersion(hello, cfg)
	if vers == 0 || vers >= tls.VersionTLS13 {
		return 0
	}
	var ecSign, rsaSign, rsaDecrypt bool
	if signer, ok := cert.PrivateKey.(crypto.Signer); ok {
		switch signer.Public().(type) {
		case *ecdsa.PublicKey, ed25519.PublicKey:
			ecSign = true
		case *rsa.PublicKey:
			rsaSign = true
		}
	}
	if dec, ok := cert.PrivateKey.(crypto.Decrypter); ok {
		_, rsaDecrypt = dec.Public().(*rsa.PublicKey)
	}
	ecdhe := len(hello.SupportedPoints) == 0 || slices.Contains(hello.SupportedPoints, pointFormatUncompressed)
	ecdhe = ecdhe && slices.ContainsFunc(hello.SupportedCurves, func(c tls.CurveID) bool {
		return c != tls.X25519MLKEM768 && slices.Contains(cfg.CurvePreferences, c)
	})
	for _, id := range hello.CipherSuites {
		if !slices.Contains(cfg.CipherSuites, id) {
			continue
		}
		f, ok := suiteFlags[id]
		if !ok || (f.tls12 && vers < tls.VersionTLS12) {
			continue
		}
		switch {
		case f.ecdhe && f.ecSign:
			ok = ecdhe && ecSign
		case f.ecdhe:
			ok = ecdhe && rsaSign
		default:
			ok = rsaDecrypt
		}
		if ok {
			return id
		}
	}
	return 0
}

// mutualVersion is the protocol version Go's server negotiates with
// hello under cfg: the highest both allow, 0 for none.
func mutualVersion(hello *tls.ClientHelloInfo, cfg *tls.Config) uint16 {
	var best uint16
	for _, v := range hello.SupportedVersions {
		if v >= cfg.MinVersion && v <= cfg.MaxVersion && v > best {
			best = v
		}
	}
	return best
}

// suiteFlag says what a cipher suite needs of a handshake.
type suiteFlag struct {
	// ecdhe: an ECDHE key exchange (else the RSA key exchange); ecSign:
	// signed with an ECDSA key (else RSA); tls12: defined by TLS 1.2.
	ecdhe, ecSign, tls12 bool
}

// suiteFlags are the needs of the suites in cipherByName.
var suiteFlags = map[uint16]suiteFlag{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:       {ecdhe: true, ecSign: true, tls12: true},
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256:         {ecdhe: true, tls12: true},
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:       {ecdhe: true, ecSign: true, tls12: true},
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384:         {ecdhe: true, tls12: true},
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: {ecdhe: true, ecSign: true, tls12: true},
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:   {ecdhe: true, tls12: true},
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA:          {ecdhe: true, ecSign: true},
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA:            {ecdhe: true},
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA:          {ecdhe: true, ecSign: true},
	tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA:            {ecdhe: true},
	tls.TLS_RSA_WITH_AES_128_GCM_SHA256:               {tls12: true},
	tls.TLS_RSA_WITH_AES_256_GCM_SHA384:               {tls12: true},
	tls.TLS_RSA_WITH_AES_128_CBC_SHA:                  {},
	tls.TLS_RSA_WITH_AES_256_CBC_SHA:                  {},
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256:       {ecdhe: true, ecSign: true, tls12: true},
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256:         {ecdhe: true, tls12: true},
	tls.TLS_RSA_WITH_AES_128_CBC_SHA256:               {tls12: true},
	tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA:                 {},
}
