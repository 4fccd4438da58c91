package rbacengine

import (
	"crypto/x509"
	"net/netip"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Input is what the policies look at: the request head (nil for the
// network filter, whose header and path matchers then match nothing, as
// Envoy's do against empty headers) and the downstream connection.
type Input struct {
	// Request is the request head; nil for a connection.
	Request *router.Request
	// Local is the downstream connection's local address
	// (destination_ip, destination_port, destination_port_range).
	Local netip.AddrPort
	// DirectRemote is the socket's peer, whatever a listener filter
	// (PROXY protocol) restored (direct_remote_ip).
	DirectRemote netip.Addr
	// Source is the connection's remote address, the one a PROXY
	// protocol header restored (source_ip); SourcePort is its port,
	// which conditions read (source.port).
	Source     netip.Addr
	SourcePort uint16
	// Remote is the client's address once x-forwarded-for is trusted as
	// the connection manager trusts it (remote_ip); Source for a
	// connection.
	Remote netip.Addr
	// ServerName is the SNI the client asked for (requested_server_name).
	ServerName string
	// TLS reports a TLS connection; Peer is the identity in the client's
	// certificate, nil when it sent none (authenticated).
	TLS  bool
	Peer *Peer
	// PeerValidated reports that the handshake validated the client's
	// certificate (mtls_authenticated).
	PeerValidated bool
	// Metadata is the request's dynamic metadata (metadata), nil when
	// there is none.
	Metadata *corev3.Metadata
	// HasRoute reports that the request matched a route, whose metadata
	// is RouteMetadata (sourced_metadata from ROUTE).
	HasRoute      bool
	RouteMetadata *corev3.Metadata
	// FilterState returns the value under a key of the request's filter
	// state, read through to its connection's (filter_state principals);
	// nil when there is none to read.
	FilterState func(key string) (any, bool)

	// urlPath is the :path without its query string and fragment, what
	// path matchers look at; hasPath is false without a :path. Evaluate
	// finds them once for all the policies.
	urlPath string
	hasPath bool
	// cel is what conditions read, made once per evaluation.
	cel celState
}

// prepare finds what several matchers read, once per evaluation.
func (in *Input) prepare() {
	in.cel.ready = false
	in.hasPath = in.Request != nil && in.Request.Path != ""
	if in.hasPath {
		in.urlPath = pathOnly(in.Request.Path)
	}
}

// pathOnly is the path without its query string and fragment: Envoy's
// path matchers look at that.
func pathOnly(path string) string {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		return path[:i]
	}
	return path
}

// Peer is the identity a client certificate carries, rendered once per
// connection: its URI SANs, DNS SANs and subject (RFC 2253), which
// authenticated principals match in that order.
type Peer struct {
	URIs, DNSNames []string
	Subject        string
	// Cert is the certificate itself, whose SANs of every type
	// mtls_authenticated's san_matcher reads.
	Cert *x509.Certificate
}

// NewPeer renders c's identity; nil for no certificate.
func NewPeer(c *x509.Certificate) *Peer {
	if c == nil {
		return nil
	}
	p := &Peer{DNSNames: c.DNSNames, Subject: c.Subject.String(), Cert: c}
	for _, u := range c.URIs {
		p.URIs = append(p.URIs, u.String())
	}
	return p
}
