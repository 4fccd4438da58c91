package tlsconfig

import (
	"crypto/tls"
	"errors"
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// certParams are a server certificate's own tls_params merged over the
// context's, compiled: what a handshake that picked the certificate
// uses in place of the context's versions, suites and groups (its
// signature algorithms are on the certificate itself).
type certParams struct {
	minVersion, maxVersion uint16
	ciphers                []uint16
	curves                 []tls.CurveID
	// fips: the merged parameters ask for FIPS_202205 where the
	// context's do not, so the handshake also gets its check.
	fips bool
}

// mergeParams is ctx with the fields cert sets replacing its own, as
// Envoy applies a certificate's tls_params: an unset version (TLS_AUTO)
// or an empty list keeps the context's.
func mergeParams(ctx, cert *tlsv3.TlsParameters) *tlsv3.TlsParameters {
	m := &tlsv3.TlsParameters{}
	if ctx != nil {
		m = proto.Clone(ctx).(*tlsv3.TlsParameters)
	}
	if v := cert.GetTlsMinimumProtocolVersion(); v != tlsv3.TlsParameters_TLS_AUTO {
		m.TlsMinimumProtocolVersion = v
	}
	if v := cert.GetTlsMaximumProtocolVersion(); v != tlsv3.TlsParameters_TLS_AUTO {
		m.TlsMaximumProtocolVersion = v
	}
	if l := cert.GetCipherSuites(); len(l) > 0 {
		m.CipherSuites = l
	}
	if l := cert.GetEcdhCurves(); len(l) > 0 {
		m.EcdhCurves = l
	}
	if l := cert.GetSignatureAlgorithms(); len(l) > 0 {
		m.SignatureAlgorithms = l
	}
	if l := cert.GetCompliancePolicies(); len(l) > 0 {
		m.CompliancePolicies = l
	}
	return m
}

// compileCertParams compiles the merged tls_params of a server
// certificate with its own (nil when it has none: the context's apply),
// and the signature algorithms its signatures use. ctxFIPS is whether
// the context's parameters already apply FIPS_202205. Errors name the
// field below the certificate's tls_params.
func compileCertParams(ctx, own *tlsv3.TlsParameters, ctxFIPS bool) (*certParams, []tls.SignatureScheme, error) {
	merged := mergeParams(ctx, own)
	cfg := &tls.Config{}
	var errs []error
	if err := applyParams(cfg, merged, tls.VersionTLS13); err != nil {
		errs = append(errs, err)
	}
	sigAlgs, err := signatureSchemes(merged.GetSignatureAlgorithms())
	if err != nil {
		errs = append(errs, err)
	}
	fips, err := compliance(merged)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, fieldpath.Prefix("tls_params.", err)
	}
	if fips {
		applyFIPS202205(cfg)
		sigAlgs = fipsSignatures
	}
	return &certParams{minVersion: cfg.MinVersion, maxVersion: cfg.MaxVersion, ciphers: cfg.CipherSuites,
		curves: cfg.CurvePreferences, fips: fips && !ctxFIPS}, sigAlgs, nil
}

// apply makes cfg (a clone) the certificate's.
func (p *certParams) apply(cfg *tls.Config) {
	cfg.MinVersion, cfg.MaxVersion = p.minVersion, p.maxVersion
	cfg.CipherSuites, cfg.CurvePreferences = p.ciphers, p.curves
	if p.fips {
		cfg.VerifyConnection = withFIPS202205(cfg.VerifyConnection)
	}
}

// errClientCertParams refuses tls_params on a client certificate,
// which Envoy ignores.
var errClientCertParams = errors.New("tls_params: not supported on a client certificate (Envoy ignores it there); " +
	"set common_tls_context.tls_params")

// certParamsPath names the tls_params of certificate i.
func certParamsPath(i int) string { return fmt.Sprintf("common_tls_context.tls_certificates[%d].", i) }
