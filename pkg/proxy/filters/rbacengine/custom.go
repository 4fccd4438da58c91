package rbacengine

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	mtlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/rbac/principals/mtls_authenticated/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// MTLSAuthenticatedName is the proxy. spelling of the one principal
// extension Outrigger implements (envoy.rbac.principals.mtls_authenticated).
const MTLSAuthenticatedName = "proxy.rbac.principals.mtls_authenticated"

// PrincipalsCategory is Envoy's extension category of RBAC principals
// (Principal.custom).
const PrincipalsCategory = "envoy.rbac.principals"

// compileCustomPrincipal compiles a Principal.custom extension; errors
// name the field below it. Only mtls_authenticated is implemented.
func compileCustomPrincipal(c *corev3.TypedExtensionConfig) (node, error) {
	cfg := &mtlsv3.Config{}
	if err := unpackTyped(c, cfg, "principal extension"); err != nil {
		return node{}, err
	}
	n := node{kind: kindMTLSAuthenticated}
	if m := cfg.GetSanMatcher(); m != nil {
		sm, err := tlsconfig.CompileSANMatcher(m)
		if err != nil {
			return node{}, fmt.Errorf("typed_config.san_matcher.%w", err)
		}
		n.san = sm
	} else if !cfg.GetAnyValidatedClientCertificate() {
		// Envoy's MtlsAuthenticatedMatcher refuses a configuration that
		// would validate nothing.
		return node{}, errors.New("typed_config: envoy.rbac.principals.mtls_authenticated did not have any configured validation: set san_matcher or any_validated_client_certificate")
	}
	return n, nil
}

// mtlsAuthenticated is Envoy's mtls_authenticated principal: a TLS
// connection whose client certificate the handshake validated, and, with
// san_matcher, one of whose SANs the matcher accepts.
func mtlsAuthenticated(n *node, in *Input) bool {
	if !in.TLS || !in.PeerValidated || in.Peer == nil {
		return false
	}
	return n.san == nil || n.san.Match(in.Peer.Cert)
}
