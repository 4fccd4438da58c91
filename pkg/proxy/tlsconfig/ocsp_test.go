package tlsconfig

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"strings"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// makeOCSP builds an (unsigned) OCSP response for the serials, valid
// until next (zero: no nextUpdate).
func makeOCSP(t *testing.T, next time.Time, serials ...int64) []byte {
	t.Helper()
	null := asn1.RawValue{FullBytes: []byte{0x30, 0x00}}
	good := asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, FullBytes: []byte{0x80, 0x00}}
	var singles []ocspSingleResponse
	for _, s := range serials {
		singles = append(singles, ocspSingleResponse{
			CertID:     ocspCertID{HashAlgorithm: null, NameHash: []byte{1}, IssuerKeyHash: []byte{2}, Serial: big.NewInt(s)},
			Status:     good,
			ThisUpdate: time.Now().Add(-time.Hour).UTC().Truncate(time.Second),
			NextUpdate: next.UTC().Truncate(time.Second),
		})
	}
	basic, err := asn1.Marshal(ocspBasicResponse{
		TBS:       ocspResponseData{ResponderID: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, IsCompound: true, Bytes: []byte{0x04, 0x01, 0x00}}, ProducedAt: time.Now().UTC().Truncate(time.Second), Responses: singles},
		Algorithm: null,
		Signature: asn1.BitString{Bytes: []byte{0}, BitLength: 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	der, err := asn1.Marshal(ocspResponseASN1{Response: ocspResponseBytes{Type: oidOCSPBasic, Response: basic}})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestParseOCSPStaple(t *testing.T) {
	leaf := &x509.Certificate{SerialNumber: big.NewInt(7)}
	now := time.Now()
	o, err := parseOCSPStaple(makeOCSP(t, now.Add(time.Hour), 7), leaf)
	if err != nil {
		t.Fatal(err)
	}
	if o.expired(now) || !o.expired(now.Add(2*time.Hour)) {
		t.Fatalf("expiry wrong: next update %v", o.nextUpdate)
	}
	if o, err := parseOCSPStaple(makeOCSP(t, time.Time{}, 7), leaf); err != nil || !o.expired(now) {
		t.Fatalf("a response without nextUpdate must count as expired: %v, %v", o, err)
	}
	for want, der := range map[string][]byte{
		"does not match its TLS certificate": makeOCSP(t, now.Add(time.Hour), 8),
		"for one certificate only":           makeOCSP(t, now.Add(time.Hour), 7, 8),
		"malformed OCSP response":            []byte("garbage"),
	} {
		if _, err := parseOCSPStaple(der, leaf); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}

func TestStapleDecision(t *testing.T) {
	now := time.Now()
	valid := &ocspStaple{der: []byte{1}, nextUpdate: now.Add(time.Hour)}
	expired := &ocspStaple{der: []byte{1}, nextUpdate: now.Add(-time.Hour)}
	const (
		lenient = tlsv3.DownstreamTlsContext_LENIENT_STAPLING
		strict  = tlsv3.DownstreamTlsContext_STRICT_STAPLING
		must    = tlsv3.DownstreamTlsContext_MUST_STAPLE
	)
	for _, tc := range []struct {
		policy   tlsv3.DownstreamTlsContext_OcspStaplePolicy
		o        *ocspStaple
		mustCert bool
		want     ocspAction
	}{
		{lenient, valid, false, ocspStapled},
		{lenient, expired, false, ocspOmitted},
		{lenient, nil, false, ocspOmitted},
		{strict, valid, false, ocspStapled},
		{strict, expired, false, ocspFailed},
		{strict, nil, false, ocspOmitted},
		{must, expired, false, ocspFailed},
		{lenient, nil, true, ocspFailed},
		{lenient, valid, true, ocspStapled},
	} {
		if got := stapleDecision(tc.policy, tc.o, tc.mustCert, now); got != tc.want {
			t.Errorf("%v, response %v, must-staple %v: got %v, want %v", tc.policy, tc.o, tc.mustCert, got, tc.want)
		}
	}
}

func TestMustStaple(t *testing.T) {
	ext := func(features ...int) pkix.Extension {
		v, err := asn1.Marshal(features)
		if err != nil {
			t.Fatal(err)
		}
		return pkix.Extension{Id: oidTLSFeature, Value: v}
	}
	if !mustStaple(&x509.Certificate{Extensions: []pkix.Extension{ext(5)}}) {
		t.Error("status_request in the TLS Feature extension is must-staple")
	}
	if mustStaple(&x509.Certificate{Extensions: []pkix.Extension{ext(17)}}) || mustStaple(&x509.Certificate{}) {
		t.Error("no status_request, no must-staple")
	}
}
