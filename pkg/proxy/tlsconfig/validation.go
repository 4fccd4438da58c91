package tlsconfig

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// FailReason is why a peer certificate failed validation; each has its
// ssl.fail_verify_* stat.
type FailReason uint8

// The reasons, as Envoy's default validator counts them.
const (
	FailNoCert   FailReason = iota + 1 // fail_verify_no_cert
	FailError                          // fail_verify_error: the chain does not verify
	FailSAN                            // fail_verify_san
	FailCertHash                       // fail_verify_cert_hash: neither hash nor SPKI pin matches
)

// VerifyError is the error a handshake fails with when the peer's
// certificate is refused.
type VerifyError struct {
	Reason FailReason
	Err    error
}

func (e *VerifyError) Error() string { return "peer certificate: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *VerifyError) Unwrap() error { return e.Err }

// sanMatcher is one compiled match_typed_subject_alt_names entry (kind 0
// for the untyped match_subject_alt_names: any SAN).
type sanMatcher struct {
	kind  tlsv3.SubjectAltNameMatcher_SanType
	exact string // set for an exact matcher, for DNS wildcard SANs
	m     router.StringMatcher
	// oid is the otherName type-id an OTHER_NAME matcher reads.
	oid asn1.ObjectIdentifier
}

// validator checks peer certificates as Envoy's default certificate
// validator does.
type validator struct {
	roots *x509.CertPool // nil: any certificate (no trusted_ca)
	// systemRoots: roots are the system's (system_root_certs), whose
	// names a server does not list in its CertificateRequest.
	systemRoots bool
	// firstCA is trusted_ca's first certificate, which /certs shows.
	firstCA      *loadedCert
	sans         []sanMatcher
	hashes       [][]byte // SHA-256 of the certificate's DER
	spkis        [][]byte // SHA-256 of the SubjectPublicKeyInfo
	allowExpired bool
	require      bool
	// crls are the crl's revocation lists; crlLeafOnly checks only the
	// leaf (only_verify_leaf_cert_crl).
	crls        []*x509.RevocationList
	crlLeafOnly bool
	// maxDepth is max_verify_depth when depthLimited (see withinDepth).
	maxDepth     int
	depthLimited bool
	// suppressCAList is suppress_client_ca_list: a listener's
	// CertificateRequest names no CAs (trusted_ca still verifies).
	suppressCAList bool
	// acceptUntrusted is trust_chain_verification ACCEPT_UNTRUSTED: a
	// failed verification is counted, not refused (see connectionCheck).
	acceptUntrusted bool
	// spiffe is custom_validator_config's SPIFFE validator, which then
	// does all the checks (nil: Envoy's default validator).
	spiffe *spiffeValidator
	now    func() time.Time
}

// active reports whether the validator asks for the peer's certificate
// at all: a validation context, or require_client_certificate.
func (v *validator) active() bool {
	return v.require || v.roots != nil || len(v.sans) > 0 || len(v.hashes) > 0 || len(v.spkis) > 0 || v.spiffe != nil
}

// checks reports whether the validator checks a peer's certificate
// (trusted_ca, SAN matchers or pins), what makes a certificate
// validated in Envoy's terms; require_client_certificate alone checks
// nothing.
func (v *validator) checks() bool {
	return v.roots != nil || len(v.sans) > 0 || len(v.hashes) > 0 || len(v.spkis) > 0
}

// compileValidation compiles a validation_context. Errors name the field
// below it.
func compileValidation(vc *tlsv3.CertificateValidationContext) (*validator, error) {
	v := &validator{now: time.Now, allowExpired: vc.GetAllowExpiredCertificate()}
	v.suppressCAList = vc.GetSuppressClientCaList()
	v.acceptUntrusted = vc.GetTrustChainVerification() == tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
	if d := vc.GetMaxVerifyDepth(); d != nil {
		v.maxDepth, v.depthLimited = int(d.GetValue()), true
	}
	var errs []error
	if vc.GetWatchedDirectory() != nil {
		errs = append(errs, errors.New("watched_directory: "+WatchedOutsideSDS))
	}
	if ds := vc.GetTrustedCa(); ds != nil {
		data, from, err := readSource(ds)
		if err != nil {
			errs = append(errs, fmt.Errorf("trusted_ca.%w", err))
		} else if cas, err := ParseCertificates(data); err != nil {
			errs = append(errs, fmt.Errorf("trusted_ca: %s: %w", from, err))
		} else {
			v.roots = x509.NewCertPool()
			v.firstCA = &loadedCert{path: sourcePath(ds), cert: cas[0]}
			for _, c := range cas {
				v.roots.AddCert(c)
			}
		}
	}
	if vc.GetTrustedCa() == nil && vc.GetSystemRootCerts() != nil {
		if err := v.useSystemRoots(); err != nil {
			errs = append(errs, err)
		}
	}
	if ds := vc.GetCrl(); ds != nil {
		data, from, err := readSource(ds)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("crl.%w", err))
		case vc.GetTrustedCa() == nil:
			errs = append(errs, fmt.Errorf("crl: Failed to load CRL from %s without trusted CA", from))
		default:
			if v.crls, err = ParseCRLs(data); err != nil {
				errs = append(errs, fmt.Errorf("crl: %s: %w", from, err))
			}
		}
		v.crlLeafOnly = vc.GetOnlyVerifyLeafCertCrl()
	}
	for i, m := range vc.GetMatchTypedSubjectAltNames() {
		sm, err := compileTypedSAN(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("match_typed_subject_alt_names[%d].%w", i, err))
			continue
		}
		v.sans = append(v.sans, sm)
	}
	//lint:ignore SA1019 Envoy still accepts the deprecated match_subject_alt_names (with its deprecation warning)
	for i, m := range vc.GetMatchSubjectAltNames() {
		sm, err := compileSAN(tlsv3.SubjectAltNameMatcher_SAN_TYPE_UNSPECIFIED, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("match_subject_alt_names[%d].%w", i, err))
			continue
		}
		v.sans = append(v.sans, sm)
	}
	for i, h := range vc.GetVerifyCertificateHash() {
		b, err := hex.DecodeString(strings.ReplaceAll(h, ":", ""))
		if err != nil || len(b) != sha256.Size {
			errs = append(errs, fmt.Errorf("verify_certificate_hash[%d]: invalid hex-encoded SHA-256 %q", i, h))
			continue
		}
		v.hashes = append(v.hashes, b)
	}
	for i, h := range vc.GetVerifyCertificateSpki() {
		b, err := base64.StdEncoding.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			errs = append(errs, fmt.Errorf("verify_certificate_spki[%d]: invalid base64-encoded SHA-256 %q", i, h))
			continue
		}
		v.spkis = append(v.spkis, b)
	}
	if vc.GetCustomValidatorConfig() != nil {
		if err := compileCustomValidator(v, vc); err != nil {
			errs = append(errs, err)
		}
	}
	return v, errors.Join(errs...)
}

// compileTypedSAN compiles a SubjectAltNameMatcher; errors name the field
// below it.
func compileTypedSAN(m *tlsv3.SubjectAltNameMatcher) (sanMatcher, error) {
	var oid asn1.ObjectIdentifier
	switch {
	case m.GetSanType() == tlsv3.SubjectAltNameMatcher_OTHER_NAME:
		var err error
		if oid, err = parseOID(m.GetOid()); err != nil {
			return sanMatcher{}, fmt.Errorf("oid: %w", err)
		}
	case m.GetOid() != "":
		return sanMatcher{}, errors.New("oid: only read with san_type OTHER_NAME")
	}
	if m.GetSanType() == tlsv3.SubjectAltNameMatcher_SAN_TYPE_UNSPECIFIED {
		return sanMatcher{}, errors.New("san_type: required")
	}
	sm, err := compileSAN(m.GetSanType(), m.GetMatcher())
	if err != nil {
		return sanMatcher{}, fmt.Errorf("matcher.%w", err)
	}
	sm.oid = oid
	return sm, nil
}

// SANMatcher is a compiled SubjectAltNameMatcher, as a validation
// context's match_typed_subject_alt_names entry matches a certificate
// (RBAC's mtls_authenticated principal reads one).
type SANMatcher struct{ m sanMatcher }

// CompileSANMatcher compiles a SubjectAltNameMatcher; errors name the
// field below it.
func CompileSANMatcher(m *tlsv3.SubjectAltNameMatcher) (*SANMatcher, error) {
	sm, err := compileTypedSAN(m)
	if err != nil {
		return nil, err
	}
	return &SANMatcher{m: sm}, nil
}

// Match reports whether some SAN of c of the matcher's type matches.
func (s *SANMatcher) Match(c *x509.Certificate) bool { return s.m.matches(c) }

// compileSAN compiles one SAN matcher; errors name the field below the
// StringMatcher.
func compileSAN(kind tlsv3.SubjectAltNameMatcher_SanType, m *matcherv3.StringMatcher) (sanMatcher, error) {
	sm, err := router.CompileStringMatcher(m)
	if err != nil {
		return sanMatcher{}, err
	}
	return sanMatcher{kind: kind, exact: m.GetExact(), m: sm}, nil
}

// verify checks the peer's chain (leaf first), in Envoy's order: presence,
// the chain against trusted_ca, the SAN matchers, then the hash and SPKI
// pins.
func (v *validator) verify(chain []*x509.Certificate) error {
	if v.spiffe != nil {
		return v.spiffe.verify(v, chain)
	}
	if len(chain) == 0 {
		if v.require {
			return &VerifyError{Reason: FailNoCert, Err: errors.New("none presented")}
		}
		return nil
	}
	if v.roots != nil {
		if err := v.verifyChain(chain); err != nil {
			return &VerifyError{Reason: FailError, Err: err}
		}
	}
	return v.verifyLeaf(chain[0])
}

// verifyLeaf runs the checks of the leaf certificate alone: the SAN
// matchers, then the hash and SPKI pins.
func (v *validator) verifyLeaf(leaf *x509.Certificate) error {
	if len(v.sans) > 0 && !v.matchSAN(leaf) {
		return &VerifyError{Reason: FailSAN, Err: errors.New("no subject alt name matches")}
	}
	return v.verifyPins(leaf)
}

// verifyPins checks the leaf against verify_certificate_hash and
// verify_certificate_spki: one of them must allow it, when any is set.
func (v *validator) verifyPins(leaf *x509.Certificate) error {
	if len(v.hashes) > 0 || len(v.spkis) > 0 {
		h := sha256.Sum256(leaf.Raw)
		s := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
		if !containsHash(v.hashes, h[:]) && !containsHash(v.spkis, s[:]) {
			return &VerifyError{Reason: FailCertHash, Err: errors.New("neither its hash nor its SPKI is allowed")}
		}
	}
	return nil
}

// maxExpiredRetries bounds the re-verifications allow_expired_certificate
// takes (one per expired certificate in the chain).
const maxExpiredRetries = 8

// verifyChain verifies the chain against the roots for client
// authentication. With allow_expired_certificate an expired certificate
// is accepted: the chain is verified again as of its expiry.
func (v *validator) verifyChain(chain []*x509.Certificate) error {
	opts := x509.VerifyOptions{
		Roots:         v.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   v.now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	for range maxExpiredRetries {
		chains, err := chain[0].Verify(opts)
		if err == nil {
			chains, err = v.withinDepth(chains)
		}
		if err == nil && len(v.crls) > 0 {
			return v.checkRevocation(chains[0], v.now())
		}
		var ci x509.CertificateInvalidError
		if err == nil || !v.allowExpired || !errors.As(err, &ci) || ci.Reason != x509.Expired || !ci.Cert.NotAfter.Before(opts.CurrentTime) {
			return err
		}
		opts.CurrentTime = ci.Cert.NotAfter
	}
	return errors.New("too many expired certificates in the chain")
}

// matchSAN reports whether some SAN of the certificate satisfies some
// matcher.
func (v *validator) matchSAN(c *x509.Certificate) bool {
	for i := range v.sans {
		if v.sans[i].matches(c) {
			return true
		}
	}
	return false
}

// matches reports whether some SAN of c of the matcher's type (any, for
// the untyped kind) satisfies it.
func (m *sanMatcher) matches(c *x509.Certificate) bool {
	any := m.kind == tlsv3.SubjectAltNameMatcher_SAN_TYPE_UNSPECIFIED
	if any || m.kind == tlsv3.SubjectAltNameMatcher_DNS {
		for _, n := range c.DNSNames {
			if m.m.Match(n) || (m.exact != "" && dnsWildcardMatch(n, m.exact)) {
				return true
			}
		}
	}
	if any || m.kind == tlsv3.SubjectAltNameMatcher_URI {
		for _, u := range c.URIs {
			if m.m.Match(u.String()) {
				return true
			}
		}
	}
	if any || m.kind == tlsv3.SubjectAltNameMatcher_EMAIL {
		for _, e := range c.EmailAddresses {
			if m.m.Match(e) {
				return true
			}
		}
	}
	if m.kind == tlsv3.SubjectAltNameMatcher_OTHER_NAME {
		for _, v := range otherNames(c, m.oid) {
			if m.m.Match(v) {
				return true
			}
		}
	}
	if any || m.kind == tlsv3.SubjectAltNameMatcher_IP_ADDRESS {
		for _, ip := range c.IPAddresses {
			if m.m.Match(ip.String()) {
				return true
			}
		}
	}
	return false
}

// dnsWildcardMatch reports whether a certificate's wildcard DNS SAN
// ("*.example.com") covers name, as Envoy's exact DNS matchers accept: the
// wildcard stands for exactly one label.
func dnsWildcardMatch(san, name string) bool {
	if !strings.HasPrefix(san, "*.") {
		return false
	}
	dot := strings.IndexByte(name, '.')
	return dot > 0 && strings.EqualFold(name[dot:], san[1:])
}

func containsHash(list [][]byte, h []byte) bool {
	for _, b := range list {
		if bytes.Equal(b, h) {
			return true
		}
	}
	return false
}
