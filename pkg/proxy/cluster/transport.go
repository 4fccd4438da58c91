package cluster

import (
	"context"
	"net"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// The ALPN protocols each pool offers when alpn_protocols is empty, as
// Envoy's HTTP pools do; the TCP proxy's connections offer none.
var (
	alpnHTTP1 = []string{tlsconfig.ALPNHTTP11}
	alpnHTTP2 = []string{tlsconfig.ALPNHTTP2}
)

// buildTransport compiles a cluster's transport_socket: the TLS transport
// socket with an UpstreamTlsContext is the only one (nil: plaintext),
// its secrets found by secrets. Errors are relative to the cluster.
func buildTransport(ts *corev3.TransportSocket, reg *extension.Registry, secrets tlsconfig.SecretResolver) (*tlsconfig.Client, []error) {
	if ts == nil {
		return nil, nil
	}
	_, msg, err := reg.Resolve(extension.Ref{
		Kind: "transport socket", Category: tlsconfig.UpstreamCategory, Name: ts.GetName(), Config: ts.GetTypedConfig(),
	}, true)
	if err != nil {
		return nil, fieldErrors("transport_socket.", err)
	}
	uc, ok := msg.(*tlsv3.UpstreamTlsContext)
	if !ok {
		return nil, []error{configErrorf("transport_socket.typed_config", "transport socket type %T is not supported by Outrigger", msg)}
	}
	cl, err := tlsconfig.CompileClientWithSecrets(uc, secrets)
	if err != nil {
		return nil, fieldErrors("transport_socket.typed_config.", err)
	}
	return cl, nil
}

// fieldErrors turns "field.path: reason" problems into field errors
// under prefix.
func fieldErrors(prefix string, err error) []error {
	var out []error
	for _, p := range fieldpath.Split(err) {
		path, reason, ok := strings.Cut(p.Error(), ": ")
		if !ok {
			path, reason = "", p.Error()
		}
		out = append(out, configErrorf(strings.TrimSuffix(prefix+path, "."), "%s", reason))
	}
	return out
}

// handshake runs the TLS handshake of a new connection to a host of a TLS
// cluster, with the server name and SAN the request in ctx asks for
// (auto_sni, auto_san_validation) or, in a dynamic forward proxy cluster
// with auto_sni, the host's name; the connection is closed when it fails.
// It also returns what the access log shows of the connection.
func (c *Cluster) handshake(ctx context.Context, conn net.Conn, alpn []string, h *upstream.Host) (net.Conn, *accesslog.TLSInfo, error) {
	ov := tlsconfig.OverrideFrom(ctx)
	if d := c.settings.dfp; d != nil && d.autoSNI {
		ov = c.settings.tls.HostOverride(dfpServerName(h))
	}
	tc, local, err := c.settings.tls.HandshakeWith(ctx, conn, alpn, ov, c.ssl)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return tc, tlsconfig.ConnInfo(tc.ConnectionState(), local), nil
}

// netConnOf is the socket under a TLS connection, or conn itself.
func netConnOf(conn net.Conn) net.Conn {
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		return nc.NetConn()
	}
	return conn
}

// TLS is the cluster's upstream TLS context, nil for a plaintext cluster.
func (c *Cluster) TLS() *tlsconfig.Client { return c.settings.tls }
