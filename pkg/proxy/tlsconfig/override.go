package tlsconfig

import (
	"context"
	"crypto/x509"
	"errors"
	"strings"
)

// Override is what one request changes in the handshake of the upstream
// connection it needs: the cluster's upstream_http_protocol_options
// auto_sni and auto_san_validation, which derive both from the request's
// host. Connections are reused only by requests with the same Override.
type Override struct {
	// ServerName replaces the context's sni ("" keeps it).
	ServerName string
	// VerifySAN, when set, is a name one of the server certificate's
	// SANs must match, on top of the validation context's checks.
	VerifySAN string
	// HostName is the upstream host's hostname (its endpoint's hostname,
	// or the name a DNS cluster resolved), the server name of a context
	// with auto_host_sni when ServerName is "". It comes from the host,
	// not the request, so it never keys a pool.
	HostName string
}

// overrideKey is the context key of an Override.
type overrideKey struct{}

// WithOverride returns ctx carrying o, for the upstream handshake the
// request needs; a zero o returns ctx itself.
func WithOverride(ctx context.Context, o Override) context.Context {
	if o == (Override{}) {
		return ctx
	}
	return context.WithValue(ctx, overrideKey{}, o)
}

// OverrideFrom is the Override ctx carries, zero when none.
func OverrideFrom(ctx context.Context) Override {
	o, _ := ctx.Value(overrideKey{}).(Override)
	return o
}

// matchSANList reports whether some SAN of c equals name, as Envoy's
// check of a SAN list does: DNS SANs compare case-insensitively and a
// wildcard DNS SAN covers one label; URI, email and IP SANs compare
// exactly.
func matchSANList(c *x509.Certificate, name string) bool {
	if matchDNSSAN(c, name) {
		return true
	}
	for _, u := range c.URIs {
		if u.String() == name {
			return true
		}
	}
	for _, e := range c.EmailAddresses {
		if e == name {
			return true
		}
	}
	for _, ip := range c.IPAddresses {
		if ip.String() == name {
			return true
		}
	}
	return false
}

// verifyWith is verify with a request's SAN name: checked after the
// chain, before the configured SAN matchers, as Envoy orders them.
func (v *validator) verifyWith(chain []*x509.Certificate, san string) error {
	if v.spiffe != nil {
		// Envoy's SPIFFE validator does not read the request's SAN.
		return v.verify(chain)
	}
	if err := v.verifyPresentChain(chain); err != nil {
		return err
	}
	if !matchSANList(chain[0], san) {
		return &VerifyError{Reason: FailSAN, Err: errors.New("no subject alt name matches " + san)}
	}
	return v.verifyLeaf(chain[0])
}

// verifySNI is verify for a context with auto_sni_san_validation: the
// server name sent must be a DNS SAN of the certificate, in place of the
// configured SAN matchers (Envoy's DNS exact matcher: case-insensitive, a
// wildcard SAN covering one label); the chain and the pins still apply.
func (v *validator) verifySNI(chain []*x509.Certificate, sni string) error {
	if v.spiffe != nil {
		// Envoy's SPIFFE validator does not read the server name.
		return v.verify(chain)
	}
	if err := v.verifyPresentChain(chain); err != nil {
		return err
	}
	if !matchDNSSAN(chain[0], sni) {
		return &VerifyError{Reason: FailSAN, Err: errors.New("no DNS subject alt name matches the SNI " + sni)}
	}
	return v.verifyPins(chain[0])
}

// verifyPresentChain checks that the server presented a certificate and,
// with trusted_ca, that its chain verifies.
func (v *validator) verifyPresentChain(chain []*x509.Certificate) error {
	if len(chain) == 0 {
		return &VerifyError{Reason: FailNoCert, Err: errors.New("none presented")}
	}
	if v.roots != nil {
		if err := v.verifyChain(chain); err != nil {
			return &VerifyError{Reason: FailError, Err: err}
		}
	}
	return nil
}

// matchDNSSAN reports whether some DNS SAN of c covers name.
func matchDNSSAN(c *x509.Certificate, name string) bool {
	for _, n := range c.DNSNames {
		if strings.EqualFold(n, name) || dnsWildcardMatch(n, name) {
			return true
		}
	}
	return false
}
