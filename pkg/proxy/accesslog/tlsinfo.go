package accesslog

import (
	"crypto/sha1" //nolint:gosec // Envoy's *_PEER_FINGERPRINT_1 operators are SHA-1 by definition
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net"
	"strings"
	"sync"
)

// TLSInfo is what the access log shows of a TLS connection, downstream
// (Entry.TLS) or upstream (Entry.UpstreamTLS), made once per connection
// (tlsconfig.AccessLogInfo) from its state and certificates. The strings
// most formats use are rendered from the certificates the first time one
// is asked for, and kept: a connection whose TLS details nothing reads
// (most of them, when no access log, header or filter shows them) costs
// no formatting.
type TLSInfo struct {
	Version, Cipher string
	// PeerCertificate is the peer's certificate itself, nil when it sent
	// none: what RBAC's authenticated principals match.
	PeerCertificate *x509.Certificate
	// PeerChain is the chain the peer sent, leaf first (nil when it sent
	// none); LocalCertificate is the certificate this proxy presented,
	// nil when none. x-forwarded-client-cert is made of them.
	PeerChain        []*x509.Certificate
	LocalCertificate *x509.Certificate
	// PeerValidated reports whether the handshake validated the peer's
	// certificate (Envoy's peerCertificateValidated): a validation
	// context checked it and every check passed. RBAC's
	// mtls_authenticated principal reads it.
	PeerValidated bool

	// peerOnce and localOnce render peer and local, once: requests on
	// the connection's HTTP/2 streams may ask at the same time.
	peerOnce, localOnce sync.Once
	peer                peerStrings
	local               localStrings
}

// peerStrings are Envoy's renderings of the peer certificate: URI SANs
// joined with ",", the subject in RFC 2253 form, the SHA-256 of the DER
// and the serial, both in lower-case hex.
type peerStrings struct{ uriSAN, subject, fingerprint256, serial string }

// localStrings are the renderings of the certificate this proxy presented.
type localStrings struct{ uriSAN, subject string }

func (t *TLSInfo) peerStrings() *peerStrings {
	t.peerOnce.Do(func() {
		c := t.PeerCertificate
		if c == nil {
			return
		}
		sum := sha256.Sum256(c.Raw)
		t.peer = peerStrings{uriSAN: uriSANs(c), subject: c.Subject.String(),
			fingerprint256: hex.EncodeToString(sum[:]), serial: c.SerialNumber.Text(16)}
	})
	return &t.peer
}

func (t *TLSInfo) localStrings() *localStrings {
	t.localOnce.Do(func() {
		if c := t.LocalCertificate; c != nil {
			t.local = localStrings{uriSAN: uriSANs(c), subject: c.Subject.String()}
		}
	})
	return &t.local
}

// PeerURISAN is the peer certificate's URI SANs joined with ",", "" without
// one (%DOWNSTREAM_PEER_URI_SAN%).
func (t *TLSInfo) PeerURISAN() string { return t.peerStrings().uriSAN }

// PeerSubject is the peer certificate's subject in RFC 2253 form.
func (t *TLSInfo) PeerSubject() string { return t.peerStrings().subject }

// PeerFingerprint256 is the SHA-256 of the peer certificate's DER, in
// lower-case hex.
func (t *TLSInfo) PeerFingerprint256() string { return t.peerStrings().fingerprint256 }

// PeerSerial is the peer certificate's serial number in lower-case hex.
func (t *TLSInfo) PeerSerial() string { return t.peerStrings().serial }

// LocalURISAN is the URI SANs of the certificate this proxy presented
// (%DOWNSTREAM_LOCAL_URI_SAN%).
func (t *TLSInfo) LocalURISAN() string { return t.localStrings().uriSAN }

// LocalSubject is the subject of the certificate this proxy presented
// (%DOWNSTREAM_LOCAL_SUBJECT%).
func (t *TLSInfo) LocalSubject() string { return t.localStrings().subject }

// uriSANs joins a certificate's URI SANs with ",", as Envoy shows them.
func uriSANs(c *x509.Certificate) string {
	uris := make([]string, len(c.URIs))
	for i, u := range c.URIs {
		uris[i] = u.String()
	}
	return strings.Join(uris, ",")
}

// RequestedServerName is the server name a downstream connection asked
// for (SNI), "" when unknown.
func RequestedServerName(c net.Conn) string {
	if r, ok := c.(interface{ RequestedServerName() string }); ok {
		return r.RequestedServerName()
	}
	return ""
}

// TLSFingerprints are the JA3 hash and JA4 fingerprint the tls_inspector
// computed of a downstream connection's ClientHello, "" for those it did
// not.
func TLSFingerprints(c net.Conn) (ja3, ja4 string) {
	if f, ok := c.(interface{ TLSFingerprints() (string, string) }); ok {
		return f.TLSFingerprints()
	}
	return "", ""
}

// FilterChainName is the configured name of the listener's filter chain
// serving a downstream connection, "" when it has none or is unknown.
func FilterChainName(c net.Conn) string {
	if f, ok := c.(interface{ FilterChainName() string }); ok {
		return f.FilterChainName()
	}
	return ""
}

// UpstreamTLS is what the access log shows of an upstream connection's
// TLS, which the cluster's connections (and their wrappers) tell; nil for
// a plaintext one.
func UpstreamTLS(c net.Conn) *TLSInfo {
	if t, ok := c.(interface{ TLSInfo() *TLSInfo }); ok {
		return t.TLSInfo()
	}
	return nil
}

// tlsField is one of the TLS operators' values, the same for both
// directions (%DOWNSTREAM_<field>% and %UPSTREAM_<field>%).
type tlsField uint8

const (
	tlsVersion tlsField = iota + 1
	tlsCipher
	tlsPeerURISAN
	tlsPeerDNSSAN
	tlsPeerIPSAN
	tlsPeerEmailSAN
	tlsPeerSubject
	tlsPeerIssuer
	tlsPeerCert
	tlsPeerFingerprint256
	tlsPeerFingerprint1
	tlsPeerSerial
	tlsPeerChainFingerprints256
	tlsPeerChainFingerprints1
	tlsPeerChainSerials
	tlsPeerCertVStart
	tlsPeerCertVEnd
	tlsLocalURISAN
	tlsLocalDNSSAN
	tlsLocalIPSAN
	tlsLocalEmailSAN
	tlsLocalSubject
)

// tlsFields are the TLS operators by name without their direction
// prefix.
var tlsFields = map[string]tlsField{
	"TLS_VERSION":                 tlsVersion,
	"TLS_CIPHER":                  tlsCipher,
	"PEER_URI_SAN":                tlsPeerURISAN,
	"PEER_DNS_SAN":                tlsPeerDNSSAN,
	"PEER_IP_SAN":                 tlsPeerIPSAN,
	"PEER_EMAIL_SAN":              tlsPeerEmailSAN,
	"PEER_SUBJECT":                tlsPeerSubject,
	"PEER_ISSUER":                 tlsPeerIssuer,
	"PEER_CERT":                   tlsPeerCert,
	"PEER_FINGERPRINT_256":        tlsPeerFingerprint256,
	"PEER_FINGERPRINT_1":          tlsPeerFingerprint1,
	"PEER_SERIAL":                 tlsPeerSerial,
	"PEER_CHAIN_FINGERPRINTS_256": tlsPeerChainFingerprints256,
	"PEER_CHAIN_FINGERPRINTS_1":   tlsPeerChainFingerprints1,
	"PEER_CHAIN_SERIALS":          tlsPeerChainSerials,
	"PEER_CERT_V_START":           tlsPeerCertVStart,
	"PEER_CERT_V_END":             tlsPeerCertVEnd,
	"LOCAL_URI_SAN":               tlsLocalURISAN,
	"LOCAL_DNS_SAN":               tlsLocalDNSSAN,
	"LOCAL_IP_SAN":                tlsLocalIPSAN,
	"LOCAL_EMAIL_SAN":             tlsLocalEmailSAN,
	"LOCAL_SUBJECT":               tlsLocalSubject,
}

// tlsOperator looks a TLS operator up: %DOWNSTREAM_<field>% or
// %UPSTREAM_<field>%.
func tlsOperator(name string) (field tlsField, upstream, ok bool) {
	rest, found := strings.CutPrefix(name, "DOWNSTREAM_")
	if !found {
		if rest, found = strings.CutPrefix(name, "UPSTREAM_"); !found {
			return 0, false, false
		}
		upstream = true
	}
	field, ok = tlsFields[rest]
	return field, upstream, ok
}

// appendTLS appends the TLS field of e's downstream or upstream
// connection; false when the connection is not TLS or the value is empty.
func appendTLS(dst []byte, p *part, e *Entry) ([]byte, bool) {
	t := e.TLS
	if p.upstreamTLS {
		t = e.UpstreamTLS
	}
	if t == nil {
		return dst, false
	}
	if p.tls == tlsPeerCertVStart || p.tls == tlsPeerCertVEnd {
		if t.PeerCertificate == nil {
			return dst, false
		}
		at := t.PeerCertificate.NotBefore
		if p.tls == tlsPeerCertVEnd {
			at = t.PeerCertificate.NotAfter
		}
		return p.layout.append(dst, at.UTC()), true
	}
	return appendString(dst, t.field(p.tls))
}

// field renders one field as Envoy does: lists joined by ",", names in
// RFC 2253 form, digests in lower-case hex, certificates in URL-encoded
// PEM.
func (t *TLSInfo) field(f tlsField) string {
	switch f {
	case tlsVersion:
		return t.Version
	case tlsCipher:
		return t.Cipher
	case tlsPeerURISAN:
		return t.PeerURISAN()
	case tlsPeerSubject:
		return t.PeerSubject()
	case tlsPeerFingerprint256:
		return t.PeerFingerprint256()
	case tlsPeerSerial:
		return t.PeerSerial()
	case tlsLocalURISAN:
		return t.LocalURISAN()
	case tlsLocalSubject:
		return t.LocalSubject()
	case tlsLocalDNSSAN, tlsLocalIPSAN, tlsLocalEmailSAN:
		return sans(t.LocalCertificate, f)
	}
	peer := t.PeerCertificate
	if peer == nil {
		return ""
	}
	switch f {
	case tlsPeerDNSSAN, tlsPeerIPSAN, tlsPeerEmailSAN:
		return sans(peer, f)
	case tlsPeerIssuer:
		return peer.Issuer.String()
	case tlsPeerCert:
		return URLEncodedPEM(t.PeerChain[:1])
	case tlsPeerFingerprint1:
		sum := sha1.Sum(peer.Raw) //nolint:gosec // see the import
		return hex.EncodeToString(sum[:])
	case tlsPeerChainFingerprints256, tlsPeerChainFingerprints1, tlsPeerChainSerials:
		out := make([]string, len(t.PeerChain))
		for i, c := range t.PeerChain {
			switch f {
			case tlsPeerChainFingerprints256:
				sum := sha256.Sum256(c.Raw)
				out[i] = hex.EncodeToString(sum[:])
			case tlsPeerChainFingerprints1:
				sum := sha1.Sum(c.Raw) //nolint:gosec // see the import
				out[i] = hex.EncodeToString(sum[:])
			default:
				out[i] = c.SerialNumber.Text(16)
			}
		}
		return strings.Join(out, ",")
	}
	return ""
}

// sans joins the DNS, IP or email SANs of c with ",", "" without c.
func sans(c *x509.Certificate, f tlsField) string {
	if c == nil {
		return ""
	}
	switch f {
	case tlsPeerDNSSAN, tlsLocalDNSSAN:
		return strings.Join(c.DNSNames, ",")
	case tlsPeerEmailSAN, tlsLocalEmailSAN:
		return strings.Join(c.EmailAddresses, ",")
	}
	ips := make([]string, len(c.IPAddresses))
	for i, ip := range c.IPAddresses {
		ips[i] = ip.String()
	}
	return strings.Join(ips, ",")
}

// URLEncodedPEM is the certificates in PEM, one after the other,
// percent-encoded as Envoy encodes them (%DOWNSTREAM_PEER_CERT%,
// x-forwarded-client-cert's Cert and Chain): every byte but letters,
// digits and "-._~", so in PEM newlines, spaces, "+", "/" and "=".
func URLEncodedPEM(certs []*x509.Certificate) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for _, c := range certs {
		for _, ch := range pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}) {
			switch {
			case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9', ch == '-', ch == '.', ch == '_', ch == '~':
				b.WriteByte(ch)
			default:
				b.WriteByte('%')
				b.WriteByte(hexDigits[ch>>4])
				b.WriteByte(hexDigits[ch&15])
			}
		}
	}
	return b.String()
}
