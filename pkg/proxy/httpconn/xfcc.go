package httpconn

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// xfccHeader is the header that carries client certificate details.
const xfccHeader = "x-forwarded-client-cert"

// xfccDetail is one set_current_client_cert_details field.
type xfccDetail uint8

const (
	xfccCert xfccDetail = iota + 1
	xfccChain
	xfccSubject
	xfccURI
	xfccDNS
	xfccIssuer
)

// readXFCCDetails lists the details set_current_client_cert_details asks
// for, in the order Envoy writes them: Cert, Chain, Subject, URI, DNS,
// then Issuer (the newest).
func readXFCCDetails(d *hcmv3.HttpConnectionManager_SetCurrentClientCertDetails) []xfccDetail {
	var out []xfccDetail
	for _, f := range []struct {
		on bool
		d  xfccDetail
	}{
		{d.GetCert(), xfccCert},
		{d.GetChain(), xfccChain},
		{d.GetSubject().GetValue(), xfccSubject},
		{d.GetUri(), xfccURI},
		{d.GetDns(), xfccDNS},
		{d.GetIssuer(), xfccIssuer},
	} {
		if f.on {
			out = append(out, f.d)
		}
	}
	return out
}

// forwardClientCert applies forward_client_cert_details to the request's
// x-forwarded-client-cert, as Envoy's connection manager does:
// ALWAYS_FORWARD_ONLY leaves it; SANITIZE, and every mode on a connection
// without a client certificate, removes it; FORWARD_ONLY leaves it;
// APPEND_FORWARD appends this hop's element (after ","), SANITIZE_SET
// replaces the header with it.
func (s *stream) forwardClientCert(h *headerList) {
	mode, details := s.xfccMode()
	if mode == hcmv3.HttpConnectionManager_ALWAYS_FORWARD_ONLY {
		return
	}
	if mode == hcmv3.HttpConnectionManager_SANITIZE || s.tls == nil || s.tls.PeerCertificate == nil {
		h.Del(xfccHeader)
		return
	}
	if mode == hcmv3.HttpConnectionManager_FORWARD_ONLY {
		return
	}
	elem := xfccElement(s.tls.LocalCertificate, s.tls.PeerChain, details)
	if old, ok := h.Get(xfccHeader); ok && old != "" && mode == hcmv3.HttpConnectionManager_APPEND_FORWARD {
		elem = old + "," + elem
	}
	h.Set(xfccHeader, elem)
}

// xfccElement is this hop's element of x-forwarded-client-cert: By= for
// each URI SAN of the certificate the proxy served, Hash= of the client's
// certificate, then the details asked for, joined by ";".
func xfccElement(local *x509.Certificate, chain []*x509.Certificate, details []xfccDetail) string {
	peer := chain[0]
	var parts []string
	if local != nil {
		for _, u := range local.URIs {
			parts = append(parts, "By="+u.String())
		}
	}
	sum := sha256.Sum256(peer.Raw)
	parts = append(parts, "Hash="+hex.EncodeToString(sum[:]))
	for _, d := range details {
		switch d {
		case xfccCert:
			parts = append(parts, `Cert="`+accesslog.URLEncodedPEM(chain[:1])+`"`)
		case xfccChain:
			parts = append(parts, `Chain="`+accesslog.URLEncodedPEM(chain)+`"`)
		case xfccSubject:
			// Present even when the subject is empty, as in Envoy.
			parts = append(parts, `Subject="`+peer.Subject.String()+`"`)
		case xfccURI:
			if len(peer.URIs) == 0 {
				// Present even without a URI SAN, as in Envoy.
				parts = append(parts, "URI=")
			}
			for _, u := range peer.URIs {
				parts = append(parts, "URI="+u.String())
			}
		case xfccDNS:
			for _, n := range peer.DNSNames {
				parts = append(parts, "DNS="+n)
			}
		case xfccIssuer:
			// Quoted as the subject is, the issuer's distinguished
			// name.
			parts = append(parts, `Issuer="`+peer.Issuer.String()+`"`)
		}
	}
	return strings.Join(parts, ";")
}
