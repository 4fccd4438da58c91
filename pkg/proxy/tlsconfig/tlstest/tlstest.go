// Package tlstest issues certificates for tests: a CA made when a test
// runs and leaf certificates signed by it, so that nothing checked in can
// expire.
package tlstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"time"
)

// CA is a certificate authority for tests.
type CA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	// PEM is the CA certificate in PEM.
	PEM []byte
}

// OtherName is an otherName SAN: a type-id and a UTF8String value.
type OtherName struct {
	OID   asn1.ObjectIdentifier
	Value string
}

// Leaf is an issued certificate and its key, in PEM.
type Leaf struct {
	Cert            *x509.Certificate
	CertPEM, KeyPEM []byte
}

// Options describe a leaf certificate. Zero values give a server
// certificate for "localhost" valid for a day, with an ECDSA P-256 key.
type Options struct {
	CommonName string
	DNS        []string
	IPs        []net.IP
	URIs       []string
	Emails     []string
	// Client makes a client certificate (ExtKeyUsageClientAuth) rather
	// than a server one.
	Client bool
	// ExtKeyUsages, when set, replaces the one usage Client chooses: a
	// mesh workload's certificate serves and connects (server and client
	// auth), as cert-manager issues it with both usages.
	ExtKeyUsages []x509.ExtKeyUsage
	// RSA uses a 2048-bit RSA key instead of ECDSA P-256.
	RSA bool
	// OtherNames are otherName SANs (a Windows UPN, an SMTP UTF8
	// mailbox), each a UTF8String value under its type-id, besides DNS.
	OtherNames []OtherName
	// KeyUsage, when set, replaces the key usages (digitalSignature and
	// keyEncipherment).
	KeyUsage x509.KeyUsage
	// NotBefore and NotAfter default to an hour ago and a day ahead.
	NotBefore, NotAfter time.Time
}

// NewCA makes a self-signed CA named name, valid for a day.
func NewCA(name string) (*CA, error) {
	return NewCAUntil(name, time.Now().Add(24*time.Hour))
}

// NewCAUntil makes a self-signed CA named name, valid until notAfter.
func NewCAUntil(name string, notAfter time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Outrigger tests"}},
		NotBefore:             time.Now().Add(-72 * time.Hour), // older than any leaf, expired ones included
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	cert, certPEM, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: certPEM}, nil
}

// Issue signs a leaf certificate.
func (ca *CA) Issue(o Options) (*Leaf, error) {
	var key crypto.Signer
	var err error
	if o.RSA {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return nil, err
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	if o.CommonName == "" && len(o.DNS) == 0 && len(o.IPs) == 0 && len(o.URIs) == 0 && len(o.Emails) == 0 {
		o.CommonName, o.DNS = "localhost", []string{"localhost"}
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if o.Client {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if len(o.ExtKeyUsages) > 0 {
		usages = o.ExtKeyUsages
	}
	keyUsage := x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	if o.KeyUsage != 0 {
		keyUsage = o.KeyUsage
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial(),
		Subject:        pkix.Name{CommonName: o.CommonName, Organization: []string{"Outrigger tests"}},
		NotBefore:      o.NotBefore,
		NotAfter:       o.NotAfter,
		KeyUsage:       keyUsage,
		ExtKeyUsage:    usages,
		DNSNames:       o.DNS,
		IPAddresses:    o.IPs,
		EmailAddresses: o.Emails,
	}
	for _, u := range o.URIs {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	if len(o.OtherNames) > 0 {
		ext, err := sanExtension(o.DNS, o.OtherNames)
		if err != nil {
			return nil, err
		}
		// Go writes no otherName itself: the extension replaces the
		// one it would make of DNSNames.
		tmpl.DNSNames, tmpl.ExtraExtensions = nil, []pkix.Extension{ext}
	}
	cert, certPEM, err := sign(tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, CertPEM: certPEM, KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}, nil
}

// sign makes the certificate tmpl, signed by parent's key, and returns
// it parsed and in PEM.
func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) (*x509.Certificate, []byte, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// CRL is a revocation list of the CA naming the given certificates,
// valid from an hour ago until nextUpdate, in PEM.
func (ca *CA) CRL(nextUpdate time.Time, revoked ...*x509.Certificate) ([]byte, error) {
	tmpl := &x509.RevocationList{Number: serial(), ThisUpdate: time.Now().Add(-time.Hour), NextUpdate: nextUpdate}
	for _, c := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{
			SerialNumber: c.SerialNumber, RevocationTime: time.Now().Add(-time.Minute),
		})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), nil
}

// serial is a random 128-bit serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}

// KeyPEM is the CA's private key in PEM (PKCS#8), for tools that sign
// with it (openssl ocsp).
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// sanExtension is a subjectAltName extension of dNSNames and otherNames.
func sanExtension(dns []string, others []OtherName) (pkix.Extension, error) {
	type otherName struct {
		TypeID asn1.ObjectIdentifier
		Value  asn1.RawValue // [0] EXPLICIT, written by hand below
	}
	var names []asn1.RawValue
	for _, d := range dns {
		names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, Bytes: []byte(d)})
	}
	for _, on := range others {
		v, err := asn1.MarshalWithParams(on.Value, "utf8")
		if err != nil {
			return pkix.Extension{}, err
		}
		b, err := asn1.Marshal(otherName{TypeID: on.OID, Value: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: v}})
		if err != nil {
			return pkix.Extension{}, err
		}
		// [0] IMPLICIT: the SEQUENCE's tag becomes context-specific 0.
		var seq asn1.RawValue
		if _, err := asn1.Unmarshal(b, &seq); err != nil {
			return pkix.Extension{}, err
		}
		names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: seq.Bytes})
	}
	val, err := asn1.Marshal(names)
	if err != nil {
		return pkix.Extension{}, err
	}
	return pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: val}, nil
}
