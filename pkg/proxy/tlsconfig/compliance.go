package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/tls"
	"errors"
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// BoringSSL's ssl_compliance_policy_fips_202205 (ssl_lib.cc
// fips202205::Configure), which Envoy applies after the other
// parameters, replacing them: TLS 1.2 to 1.3, the ECDHE AES-GCM suites,
// the P-256 and P-384 groups, and these signature algorithms, for its
// own signatures and the peer's.
var (
	fipsCipherSuites = []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	}
	fipsCurves     = []tls.CurveID{tls.CurveP256, tls.CurveP384}
	fipsSignatures = []tls.SignatureScheme{
		tls.PSSWithSHA256, tls.PSSWithSHA384, tls.PSSWithSHA512,
		tls.PKCS1WithSHA256, tls.PKCS1WithSHA384, tls.PKCS1WithSHA512,
		tls.ECDSAWithP256AndSHA256, tls.ECDSAWithP384AndSHA384,
	}
)

// compliance reads compliance_policies: whether FIPS_202205 applies.
// The other policies want ML-KEM-1024 key agreement, which Go's
// crypto/tls does not have; more than one policy Envoy does not apply
// (an ENVOY_BUG), so both are refused. Errors name the field below
// tls_params.
func compliance(p *tlsv3.TlsParameters) (fips bool, err error) {
	list := p.GetCompliancePolicies()
	switch {
	case len(list) == 0:
		return false, nil
	case len(list) > 1:
		return false, errors.New("compliance_policies: more than one policy is not supported (Envoy applies none of them)")
	case list[0] != tlsv3.TlsParameters_FIPS_202205:
		return false, fmt.Errorf("compliance_policies[0]: %s is not supported by Outrigger: it needs ML-KEM-1024 key agreement, "+
			"which Go's crypto/tls does not implement", list[0])
	}
	return true, nil
}

// applyFIPS202205 replaces cfg's versions, TLS 1.2 suites and groups by
// the policy's.
func applyFIPS202205(cfg *tls.Config) {
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS13
	cfg.CipherSuites = fipsCipherSuites
	cfg.CurvePreferences = fipsCurves
}

// withFIPS202205 adds to verify (nil: none) the parts of the policy Go's
// crypto/tls has no setting for, checked once the handshake has chosen
// them: a TLS 1.3 suite other than AES-GCM, and a peer certificate
// whose key signs only with algorithms outside the policy (Ed25519;
// in TLS 1.3 ECDSA on curves other than P-256 and P-384), fail the
// handshake.
func withFIPS202205(verify func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return andThen(verify, checkFIPS202205)
}

// applyCompliance applies compliance_policies to cfg and reports
// whether FIPS_202205 applies. Errors name the field below the
// CommonTlsContext.
func applyCompliance(cfg *tls.Config, p *tlsv3.TlsParameters) (bool, error) {
	fips, err := compliance(p)
	if err != nil {
		return false, fieldpath.Prefix("common_tls_context.tls_params.", err)
	}
	if fips {
		applyFIPS202205(cfg)
	}
	return fips, nil
}

// checkFIPS202205 is withFIPS202205's check.
func checkFIPS202205(cs tls.ConnectionState) error {
	if cs.Version >= tls.VersionTLS13 && cs.CipherSuite != tls.TLS_AES_128_GCM_SHA256 && cs.CipherSuite != tls.TLS_AES_256_GCM_SHA384 {
		return fmt.Errorf("compliance policy FIPS_202205: TLS 1.3 cipher suite %s is not allowed", tls.CipherSuiteName(cs.CipherSuite))
	}
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	switch k := cs.PeerCertificates[0].PublicKey.(type) {
	case ed25519.PublicKey:
		return errors.New("compliance policy FIPS_202205: the peer's Ed25519 signature is not allowed")
	case *ecdsa.PublicKey:
		// TLS 1.3 binds the hash to the curve; in TLS 1.2 a P-521 key
		// may sign with an allowed hash, which Go does not report.
		if cs.Version >= tls.VersionTLS13 && k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("compliance policy FIPS_202205: the peer's ECDSA signature on %s is not allowed", k.Curve.Params().Name)
		}
	}
	return nil
}
