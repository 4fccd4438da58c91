package tlsconfig

import (
	"crypto/x509"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// loadedCert is a certificate a context loaded, with where it came from,
// for /certs.
type loadedCert struct {
	path string
	cert *x509.Certificate
	// ocsp is the OCSP response stapled with it, nil for none.
	ocsp *ocspStaple
}

// sourcePath names a DataSource as /certs does: the file name, or
// "<inline>".
func sourcePath(ds *corev3.DataSource) string {
	if f := ds.GetFilename(); f != "" {
		return f
	}
	return "<inline>"
}

// contextCerts are the certificates of one TLS context: the first CA
// certificate of trusted_ca (nil without one) and the leaf of each
// tls_certificates entry.
type contextCerts struct {
	ca    *loadedCert
	chain []loadedCert
}

// details is the context's /certs entry as of now.
func (cc *contextCerts) details(now time.Time) *adminv3.Certificate {
	out := &adminv3.Certificate{}
	if cc.ca != nil {
		out.CaCert = []*adminv3.CertificateDetails{certificateDetails(*cc.ca, now)}
	}
	for _, c := range cc.chain {
		out.CertChain = append(out.CertChain, certificateDetails(c, now))
	}
	return out
}

// firstExpiry is the soonest NotAfter of the context's certificates, zero
// without any.
func (cc *contextCerts) firstExpiry() time.Time {
	var first time.Time
	all := cc.chain
	if cc.ca != nil {
		all = append([]loadedCert{*cc.ca}, all...)
	}
	for _, c := range all {
		if first.IsZero() || c.cert.NotAfter.Before(first) {
			first = c.cert.NotAfter
		}
	}
	return first
}

// DaysUntil is the whole days from now until t, 0 once t has passed, as
// Envoy counts days_until_expiration.
func DaysUntil(t, now time.Time) uint64 {
	if !t.After(now) {
		return 0
	}
	return uint64(t.Sub(now) / (24 * time.Hour))
}

// certificateDetails is one certificate as /certs shows it: its serial in
// lower-case hex, its subject alt names, validity and days left.
func certificateDetails(c loadedCert, now time.Time) *adminv3.CertificateDetails {
	d := &adminv3.CertificateDetails{
		Path:                c.path,
		SerialNumber:        c.cert.SerialNumber.Text(16),
		DaysUntilExpiration: DaysUntil(c.cert.NotAfter, now),
		ValidFrom:           timestamppb.New(c.cert.NotBefore),
		ExpirationTime:      timestamppb.New(c.cert.NotAfter),
	}
	san := func(n *adminv3.SubjectAlternateName) { d.SubjectAltNames = append(d.SubjectAltNames, n) }
	for _, u := range c.cert.URIs {
		san(&adminv3.SubjectAlternateName{Name: &adminv3.SubjectAlternateName_Uri{Uri: u.String()}})
	}
	for _, n := range c.cert.DNSNames {
		san(&adminv3.SubjectAlternateName{Name: &adminv3.SubjectAlternateName_Dns{Dns: n}})
	}
	for _, ip := range c.cert.IPAddresses {
		san(&adminv3.SubjectAlternateName{Name: &adminv3.SubjectAlternateName_IpAddress{IpAddress: ip.String()}})
	}
	if o := c.ocsp; o != nil {
		d.OcspDetails = &adminv3.CertificateDetails_OcspDetails{ValidFrom: timestamppb.New(o.thisUpdate)}
		if !o.nextUpdate.IsZero() {
			d.OcspDetails.Expiration = timestamppb.New(o.nextUpdate)
		}
	}
	return d
}

// Certificates is the server context's /certs entry as of now.
func (s *Server) Certificates(now time.Time) *adminv3.Certificate {
	return s.current().certs.details(now)
}

// FirstExpiry is when the soonest of the server context's certificates
// expires.
func (s *Server) FirstExpiry() time.Time { return s.current().certs.firstExpiry() }

// Certificates is the client context's /certs entry as of now.
func (cl *Client) Certificates(now time.Time) *adminv3.Certificate {
	return cl.current().certs.details(now)
}

// FirstExpiry is when the soonest of the client context's certificates
// expires (zero without any).
func (cl *Client) FirstExpiry() time.Time { return cl.current().certs.firstExpiry() }
