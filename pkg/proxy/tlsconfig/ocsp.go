package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// The ASN.1 of an OCSP response (RFC 6960 §4.2.1), as far as stapling
// needs it: the status, and each SingleResponse's certificate serial and
// validity.
type (
	ocspResponseASN1 struct {
		Status   asn1.Enumerated
		Response ocspResponseBytes `asn1:"explicit,tag:0,optional"`
	}
	ocspResponseBytes struct {
		Type     asn1.ObjectIdentifier
		Response []byte
	}
	ocspBasicResponse struct {
		TBS       ocspResponseData
		Algorithm asn1.RawValue
		Signature asn1.BitString
		Certs     []asn1.RawValue `asn1:"explicit,tag:0,optional"`
	}
	ocspResponseData struct {
		Raw         asn1.RawContent
		Version     int `asn1:"optional,default:0,explicit,tag:0"`
		ResponderID asn1.RawValue
		ProducedAt  time.Time `asn1:"generalized"`
		Responses   []ocspSingleResponse
		Extensions  []asn1.RawValue `asn1:"explicit,tag:1,optional"`
	}
	ocspSingleResponse struct {
		CertID     ocspCertID
		Status     asn1.RawValue
		ThisUpdate time.Time       `asn1:"generalized"`
		NextUpdate time.Time       `asn1:"generalized,explicit,tag:0,optional"`
		Extensions []asn1.RawValue `asn1:"explicit,tag:1,optional"`
	}
	ocspCertID struct {
		HashAlgorithm asn1.RawValue
		NameHash      []byte
		IssuerKeyHash []byte
		Serial        *big.Int
	}
)

// oidOCSPBasic is id-pkix-ocsp-basic, the only response type.
var oidOCSPBasic = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 48, 1, 1}

// oidTLSFeature is the TLS Feature extension (RFC 7633) that makes a
// certificate "must staple" when it lists status_request (5).
var oidTLSFeature = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 24}

// extStatusRequest is the status_request TLS extension a client sends to
// ask for a stapled OCSP response.
const extStatusRequest = 5

// ocspStaple is a certificate's OCSP response, ready to staple.
type ocspStaple struct {
	der []byte
	// thisUpdate is when the response was valid from (/certs).
	thisUpdate time.Time
	// nextUpdate is when the response expires; zero when it does not
	// say, which Envoy takes as expired.
	nextUpdate time.Time
}

// expired reports whether the response may no longer be stapled at now.
func (o *ocspStaple) expired(now time.Time) bool {
	return o == nil || o.nextUpdate.IsZero() || o.nextUpdate.Before(now)
}

// loadOCSPStaple reads a TlsCertificate's ocsp_staple (DER, from a file
// or inline_bytes) for the certificate leaf. Errors name the field below
// the TlsCertificate.
func loadOCSPStaple(ds *corev3.DataSource, leaf *x509.Certificate) (*ocspStaple, error) {
	if _, ok := ds.GetSpecifier().(*corev3.DataSource_InlineString); ok {
		return nil, errors.New("ocsp_staple: OCSP staple cannot be provided via inline_string")
	}
	der, from, err := readSource(ds)
	if err != nil {
		return nil, fmt.Errorf("ocsp_staple.%w", err)
	}
	o, err := parseOCSPStaple(der, leaf)
	if err != nil {
		return nil, fmt.Errorf("ocsp_staple: %s: %w", from, err)
	}
	return o, nil
}

// parseOCSPStaple parses an OCSP response for leaf with Envoy's checks: a
// successful response, for one certificate only, whose serial is leaf's.
// The signature is the client's to check, as with Envoy.
func parseOCSPStaple(der []byte, leaf *x509.Certificate) (*ocspStaple, error) {
	var resp ocspResponseASN1
	if rest, err := asn1.Unmarshal(der, &resp); err != nil || len(rest) > 0 {
		return nil, errors.New("malformed OCSP response")
	}
	if resp.Status != 0 {
		return nil, fmt.Errorf("OCSP response was unsuccessful (status %d)", resp.Status)
	}
	if !resp.Response.Type.Equal(oidOCSPBasic) {
		return nil, errors.New("OCSP response has no basic response")
	}
	var basic ocspBasicResponse
	if _, err := asn1.Unmarshal(resp.Response.Response, &basic); err != nil {
		return nil, errors.New("malformed OCSP basic response")
	}
	if len(basic.TBS.Responses) != 1 {
		return nil, errors.New("OCSP Response must be for one certificate only")
	}
	single := basic.TBS.Responses[0]
	if single.CertID.Serial == nil || single.CertID.Serial.Cmp(leaf.SerialNumber) != 0 {
		return nil, errors.New("OCSP response does not match its TLS certificate")
	}
	return &ocspStaple{der: der, thisUpdate: single.ThisUpdate, nextUpdate: single.NextUpdate}, nil
}

// mustStaple reports whether a certificate carries the TLS Feature
// extension with status_request: its OCSP response must always be
// stapled, whatever the policy.
func mustStaple(c *x509.Certificate) bool {
	for _, e := range c.Extensions {
		if !e.Id.Equal(oidTLSFeature) {
			continue
		}
		var features []int
		if _, err := asn1.Unmarshal(e.Value, &features); err == nil && slices.Contains(features, extStatusRequest) {
			return true
		}
	}
	return false
}

// ocspAction is what a handshake does about OCSP, as Envoy counts it.
type ocspAction uint8

const (
	// ocspNotAsked: the client did not ask for a staple.
	ocspNotAsked ocspAction = iota
	ocspStapled
	ocspOmitted
	ocspFailed
)

// errOCSPStapleRequired fails a handshake whose certificate must be
// stapled with a valid response it does not have.
var errOCSPStapleRequired = errors.New("tls: no valid OCSP response to staple (ocsp_staple_policy)")

// stapleDecision applies the policy (upgraded to MUST_STAPLE for a
// must-staple certificate) to a client that asked for a staple, as
// Envoy's ocspStapleAction does: a valid response is stapled; without one
// LENIENT_STAPLING goes on without, STRICT_STAPLING too unless the
// response expired, and MUST_STAPLE fails the handshake.
func stapleDecision(policy tlsv3.DownstreamTlsContext_OcspStaplePolicy, o *ocspStaple, must bool, now time.Time) ocspAction {
	if must {
		policy = tlsv3.DownstreamTlsContext_MUST_STAPLE
	}
	valid := !o.expired(now)
	switch {
	case valid:
		return ocspStapled
	case policy == tlsv3.DownstreamTlsContext_MUST_STAPLE,
		policy == tlsv3.DownstreamTlsContext_STRICT_STAPLING && o != nil:
		return ocspFailed
	}
	return ocspOmitted
}

// withStaple is cert as served to one client: with the response to
// staple, or a copy without one.
func withStaple(cert *tls.Certificate, o *ocspStaple, action ocspAction) *tls.Certificate {
	if action != ocspStapled {
		return cert
	}
	c := *cert
	c.OCSPStaple = o.der
	return &c
}

// SecondsUntilFirstOCSPExpiry is, for a server context with stapled OCSP
// responses, the whole seconds until the soonest of them expires (0 once
// one has, or for one without nextUpdate); false without any response.
func (s *Server) SecondsUntilFirstOCSPExpiry(now time.Time) (uint64, bool) {
	var (
		secs  uint64
		found bool
	)
	for _, o := range s.current().ocsp {
		if o == nil {
			continue
		}
		var left uint64
		if !o.expired(now) {
			left = uint64(o.nextUpdate.Sub(now) / time.Second)
		}
		if !found || left < secs {
			secs, found = left, true
		}
	}
	return secs, found
}
