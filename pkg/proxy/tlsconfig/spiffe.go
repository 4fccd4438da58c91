package tlsconfig

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// Names of the certificate validators custom_validator_config may name.
const (
	// SPIFFEValidatorName is Envoy's SPIFFE certificate validator.
	SPIFFEValidatorName = "envoy.tls.cert_validator.spiffe"
	// DefaultValidatorName is Envoy's default validator, named.
	DefaultValidatorName = "envoy.tls.cert_validator.default"
	// SPIFFEExtensionName is the SPIFFE validator in the extension
	// registry (Outrigger's spelling of SPIFFEValidatorName).
	SPIFFEExtensionName = "proxy.tls.cert_validator.spiffe"
	// CertValidatorCategory is the extension category of certificate
	// validators.
	CertValidatorCategory = "envoy.tls.cert_validator"
)

// spiffeValidator checks peer certificates as Envoy's SPIFFE validator
// does: the leaf's SPIFFE ID (its URI SAN) names a trust domain, and the
// chain must verify against that trust domain's bundle alone, so that no
// trust domain can mint identities of another.
type spiffeValidator struct {
	// domains holds, per trust domain name, a validator with the
	// domain's CAs and CRLs (and allow_expired_certificate).
	domains map[string]*validator
	// names are all the bundles' CAs, which a listener's
	// CertificateRequest names.
	names *x509.CertPool
}

// spiffeUnread lists the fields of vc that are set but that Envoy's
// SPIFFE validator does not read: refused beside it rather than ignored.
func spiffeUnread(vc *tlsv3.CertificateValidationContext) []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"trusted_ca", vc.GetTrustedCa() != nil},
		{"crl", vc.GetCrl() != nil},
		{"only_verify_leaf_cert_crl", vc.GetOnlyVerifyLeafCertCrl()},
		{"verify_certificate_hash", len(vc.GetVerifyCertificateHash()) > 0},
		{"verify_certificate_spki", len(vc.GetVerifyCertificateSpki()) > 0},
		{"max_verify_depth", vc.GetMaxVerifyDepth() != nil},
		{"trust_chain_verification", vc.GetTrustChainVerification() != tlsv3.CertificateValidationContext_VERIFY_TRUST_CHAIN},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// compileCustomValidator compiles custom_validator_config into v: the
// SPIFFE validator, or the default one named (nothing to do). Errors
// name the field below the validation context.
func compileCustomValidator(v *validator, vc *tlsv3.CertificateValidationContext) error {
	cv := vc.GetCustomValidatorConfig()
	switch strings.Replace(cv.GetName(), "proxy.", "envoy.", 1) {
	case DefaultValidatorName:
		return nil
	case SPIFFEValidatorName:
	default:
		return fmt.Errorf("custom_validator_config.name: unknown certificate validator %q (Outrigger has %s and %s)", cv.GetName(), SPIFFEValidatorName, DefaultValidatorName)
	}
	var cfg tlsv3.SPIFFECertValidatorConfig
	if err := cv.GetTypedConfig().UnmarshalTo(&cfg); err != nil {
		return fmt.Errorf("custom_validator_config.typed_config: %s takes an envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig: %w", SPIFFEValidatorName, err)
	}
	var errs []error
	for _, f := range spiffeUnread(vc) {
		errs = append(errs, fmt.Errorf("%s: not read by the %s validator (Envoy ignores it beside custom_validator_config); refused rather than ignored", f, SPIFFEValidatorName))
	}
	// Only URI SAN matchers apply: the SPIFFE specification says nothing
	// of the other SAN types, and Envoy's SPIFFE validator leaves them out.
	var uris []sanMatcher
	for _, m := range v.sans {
		if m.kind == tlsv3.SubjectAltNameMatcher_URI || m.kind == tlsv3.SubjectAltNameMatcher_SAN_TYPE_UNSPECIFIED {
			m.kind = tlsv3.SubjectAltNameMatcher_URI
			uris = append(uris, m)
		}
	}
	v.sans = uris
	s := &spiffeValidator{domains: map[string]*validator{}, names: x509.NewCertPool()}
	const at = "custom_validator_config.typed_config."
	switch {
	case cfg.GetTrustBundles() != nil:
		if len(cfg.GetTrustDomains()) > 0 {
			errs = append(errs, errors.New(at+"trust_domains: Envoy ignores them when trust_bundles is set; refused rather than ignored"))
		}
		if cfg.GetTrustBundles().GetFilename() != "" {
			errs = append(errs, errors.New(at+"trust_bundles.filename: not supported by Outrigger: Envoy watches a trust bundle map file "+
				"and reloads it when it changes, which Outrigger does not yet do; give the map inline (inline_string, inline_bytes, "+
				"environment_variable) or the bundles in trust_domains"))
		} else if err := s.loadTrustBundleMap(v, cfg.GetTrustBundles()); err != nil {
			errs = append(errs, fmt.Errorf(at+"trust_bundles: %w", err))
		}
	default:
		for i, d := range cfg.GetTrustDomains() {
			if err := s.loadTrustDomain(v, d); err != nil {
				errs = append(errs, fmt.Errorf(at+"trust_domains[%d].%w", i, err))
			}
		}
	}
	v.spiffe = s
	return errors.Join(errs...)
}

// loadTrustDomain loads one trust_domains entry: a PEM bundle of CAs, and
// of CRLs, which then must cover the whole chain (as Envoy sets
// X509_V_FLAG_CRL_CHECK_ALL). Errors name the field below the entry.
func (s *spiffeValidator) loadTrustDomain(v *validator, d *tlsv3.SPIFFECertValidatorConfig_TrustDomain) error {
	if d.GetWorkloadTrustDomain() != "" {
		return errors.New("workload_trust_domain: not supported by Outrigger: it selects the bundle by the filter state object envoy.tls.cert_validator.spiffe.workload_trust_domain, which nothing here sets")
	}
	name := d.GetName()
	if _, dup := s.domains[name]; dup {
		return fmt.Errorf("name: Multiple trust bundles are given for one trust domain for %s", name)
	}
	data, from, err := readSource(d.GetTrustBundle())
	if err != nil {
		return fmt.Errorf("trust_bundle.%w", err)
	}
	cas, crls, err := parseBundlePEM(data)
	if err != nil {
		return fmt.Errorf("trust_bundle: %s: %w", from, err)
	}
	if len(cas) == 0 {
		return fmt.Errorf("trust_bundle: %s: Failed to load trusted CA certificate for %s", from, name)
	}
	s.add(v, name, bundleSource(name, d.GetTrustBundle()), cas, crls)
	return nil
}

// add makes the trust domain's validator, the first CA of all being what
// /certs shows ("domain: file", as Envoy names it).
func (s *spiffeValidator) add(v *validator, name, path string, cas []*x509.Certificate, crls []*x509.RevocationList) {
	d := &validator{roots: x509.NewCertPool(), crls: crls, allowExpired: v.allowExpired, now: v.now}
	for _, c := range cas {
		d.roots.AddCert(c)
		s.names.AddCert(c)
	}
	if v.firstCA == nil {
		v.firstCA = &loadedCert{path: path, cert: cas[0]}
	}
	s.domains[name] = d
}

// bundleSource is how /certs names a trust domain's bundle.
func bundleSource(domain string, ds *corev3.DataSource) string {
	return domain + ": " + sourcePath(ds)
}

// parseBundlePEM reads the certificates and CRLs of a PEM trust bundle;
// other blocks (keys) are skipped, as OpenSSL's PEM_X509_INFO_read does.
func parseBundlePEM(data []byte) ([]*x509.Certificate, []*x509.RevocationList, error) {
	var (
		cas  []*x509.Certificate
		crls []*x509.RevocationList
	)
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return cas, crls, nil
		}
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("certificate %d: %w", len(cas), err)
			}
			cas = append(cas, c)
		case "X509 CRL":
			l, err := x509.ParseRevocationList(b.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("CRL %d: %w", len(crls), err)
			}
			crls = append(crls, l)
		}
	}
}

// trustBundleMap is a SPIFFE trust bundle map: per trust domain, a SPIFFE
// bundle (a JWK set) whose "x509-svid" keys each carry one CA in x5c.
type trustBundleMap struct {
	TrustDomains map[string]struct {
		Keys []struct {
			Use string   `json:"use"`
			X5c []string `json:"x5c"`
		} `json:"keys"`
	} `json:"trust_domains"`
}

// loadTrustBundleMap loads trust_bundles, a SPIFFE trust bundle map in
// JSON, from an inline source. Keys of other uses (jwt-svid) are skipped.
func (s *spiffeValidator) loadTrustBundleMap(v *validator, ds *corev3.DataSource) error {
	data, from, err := readSource(ds)
	if err != nil {
		return err
	}
	var m trustBundleMap
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%s: invalid SPIFFE trust bundle map: %w", from, err)
	}
	if len(m.TrustDomains) == 0 {
		return fmt.Errorf("%s: no trust domains in the SPIFFE trust bundle map", from)
	}
	names := make([]string, 0, len(m.TrustDomains))
	for name := range m.TrustDomains {
		names = append(names, name)
	}
	sort.Strings(names) // the first CA /certs shows does not vary
	var errs []error
	for _, name := range names {
		var cas []*x509.Certificate
		for i, k := range m.TrustDomains[name].Keys {
			if k.Use != "x509-svid" {
				continue
			}
			if len(k.X5c) != 1 {
				errs = append(errs, fmt.Errorf("%s: trust domain %q key %d: expected exactly one certificate in x5c, found %d", from, name, i, len(k.X5c)))
				continue
			}
			der, err := base64.StdEncoding.DecodeString(k.X5c[0])
			var c *x509.Certificate
			if err == nil {
				c, err = x509.ParseCertificate(der)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: trust domain %q key %d: x5c: %w", from, name, i, err))
				continue
			}
			cas = append(cas, c)
		}
		if len(cas) == 0 {
			errs = append(errs, fmt.Errorf("%s: trust domain %q: no x509-svid key with a certificate", from, name))
			continue
		}
		s.add(v, name, name+": <inline>", cas, nil)
	}
	return errors.Join(errs...)
}

// verify checks the peer's chain (leaf first) in Envoy's SPIFFE order:
// the leaf must not be a CA nor sign certificates or CRLs; its first URI
// SAN's trust domain picks the bundle, against which the chain must
// verify; then the URI SAN matchers. Every failure but the SAN match is
// fail_verify_error.
func (s *spiffeValidator) verify(v *validator, chain []*x509.Certificate) error {
	if len(chain) == 0 {
		return &VerifyError{Reason: FailError, Err: errors.New("empty cert chain")}
	}
	leaf := chain[0]
	if leaf.IsCA || leaf.KeyUsage&(x509.KeyUsageCertSign|x509.KeyUsageCRLSign) != 0 {
		return &VerifyError{Reason: FailError, Err: errors.New("cert precheck: a SPIFFE leaf must not be a CA")}
	}
	domain := ""
	if len(leaf.URIs) > 0 {
		// A valid SVID has one URI SAN: Envoy reads the first.
		domain = trustDomain(leaf.URIs[0].String())
	}
	d := s.domains[domain]
	if d == nil {
		return &VerifyError{Reason: FailError, Err: fmt.Errorf("no trust bundle store for the trust domain %q", domain)}
	}
	if err := d.verifyChain(chain); err != nil {
		return &VerifyError{Reason: FailError, Err: err}
	}
	if len(v.sans) > 0 && !v.matchSAN(leaf) {
		return &VerifyError{Reason: FailSAN, Err: errors.New("no URI subject alt name matches")}
	}
	return nil
}

// trustDomain is the trust domain of a SPIFFE ID, "" when san is not one
// ("spiffe://domain/path").
func trustDomain(san string) string {
	rest, ok := strings.CutPrefix(san, "spiffe://")
	if !ok {
		return ""
	}
	domain, _, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return domain
}
