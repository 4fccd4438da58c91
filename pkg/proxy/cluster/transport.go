package cluster

import (
	"context"
	"net"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	h11v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/http_11_proxy/v3"
	iuv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/internal_upstream/v3"
	upstreamppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	taptransportv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tap/v3"
	tcpstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tcp_stats/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
	taptransport "github.com/outrigger-dev/outrigger/pkg/proxy/tap/transport"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tcpstats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstreamproxyprotocol"
)

// The ALPN protocols each pool offers when alpn_protocols is empty, as
// Envoy's HTTP pools do; the TCP proxy's connections offer none.
var (
	alpnHTTP1 = []string{tlsconfig.ALPNHTTP11}
	alpnHTTP2 = []string{tlsconfig.ALPNHTTP2}
)

// transportDeps are what a cluster's transport socket is built with:
// the extensions, the secrets TLS names, the registry of admin taps and
// the stat store (the tap's transport.tap.* counters) and the runtime
// (the tap's tap_enabled keys).
type transportDeps struct {
	ext     *extension.Registry
	secrets tlsconfig.SecretResolver
	keyLog  tlsconfig.KeyLogOpener
	taps    *tap.Registry
	stats   *stats.Store
	runtime liveRuntime
	// cluster is the observability name of the cluster being built, for
	// the upstream PROXY protocol TLVs' %UPSTREAM_CLUSTER%.
	cluster string
}

// liveRuntime reads the runtime's current snapshot (none: every key has
// its default).
type liveRuntime func() *runtime.Snapshot

// Uint64 implements runtime.Reader.
func (l liveRuntime) Uint64(key string, def uint64) uint64 {
	if l == nil {
		return def
	}
	return l().Uint64(key, def)
}

// Fraction implements runtime.FractionReader.
func (l liveRuntime) Fraction(key string) (num, den uint64, ok bool) {
	if l == nil {
		return 0, 0, false
	}
	return l().Fraction(key)
}

// transport is a compiled cluster transport_socket: its TLS (nil:
// plaintext), the tap over it (nil: none) and the PROXY protocol header
// its connections start with (nil: none).
type transport struct {
	tls *tlsconfig.Client
	tap *taptransport.Socket
	pp  *upstreamproxyprotocol.Socket
	// iu is the internal_upstream transport socket, nil for none.
	iu *internalUpstream
	// h11 is the http_11_proxy transport socket, nil for none.
	h11 *http11Proxy
	// tcpStats is the tcp_stats transport socket, nil for none.
	tcpStats *tcpstats.Stats
}

// buildTransport compiles a cluster's transport_socket: TLS with an
// UpstreamTlsContext (nil: plaintext), raw_buffer (plaintext), and the tap
// and upstream PROXY protocol transport sockets over one of them, whose
// counters go under scope. Errors are relative to the cluster.
func buildTransport(ts *corev3.TransportSocket, d transportDeps, scope string) (transport, []error) {
	return buildTransportAt(ts, d, scope, "transport_socket.")
}

func buildTransportAt(ts *corev3.TransportSocket, d transportDeps, scope, field string) (transport, []error) {
	if ts == nil {
		return transport{}, nil
	}
	_, msg, err := d.ext.Resolve(extension.Ref{
		Kind: "transport socket", Category: tlsconfig.UpstreamCategory, Name: ts.GetName(), Config: ts.GetTypedConfig(),
	}, true)
	if err != nil {
		return transport{}, fieldErrors(field, err)
	}
	switch m := msg.(type) {
	case *rawbufferv3.RawBuffer:
		return transport{}, nil
	case *taptransportv3.Tap:
		if d.stats == nil {
			return transport{}, []error{configErrorf(field+"typed_config", "no stat store for the tap transport socket")}
		}
		tp, err := taptransport.Compile(m, d.taps, d.stats.Scope(scope), d.runtime)
		if err != nil {
			return transport{}, fieldErrors(field+"typed_config.", err)
		}
		inner, errs := buildTransportAt(m.GetTransportSocket(), d, scope, field+"typed_config.transport_socket.")
		if inner.tap != nil {
			_ = inner.tap.Close()
			errs = append(errs, configErrorf(field+"typed_config.transport_socket", "a tap transport socket cannot wrap another tap"))
		}
		if len(errs) > 0 {
			_ = tp.Close()
			return transport{}, errs
		}
		inner.tap = tp
		return inner, nil
	case *upstreamppv3.ProxyProtocolUpstreamTransport:
		if d.stats == nil {
			return transport{}, []error{configErrorf(field+"typed_config", "no stat store for the upstream PROXY protocol transport socket")}
		}
		pp, err := upstreamproxyprotocol.Compile(m, d.stats.Scope(scope), d.ext, d.cluster)
		if err != nil {
			return transport{}, fieldErrors(field+"typed_config.", err)
		}
		inner, errs := buildTransportAt(m.GetTransportSocket(), d, scope, field+"typed_config.transport_socket.")
		if inner.pp != nil {
			errs = append(errs, configErrorf(field+"typed_config.transport_socket", "an upstream PROXY protocol transport socket cannot wrap another"))
		}
		if len(errs) > 0 {
			if inner.tap != nil {
				_ = inner.tap.Close()
			}
			return transport{}, errs
		}
		inner.pp = pp
		return inner, nil
	case *h11v3.Http11ProxyUpstreamTransport:
		h11, err := compileHTTP11Proxy(m)
		if err != nil {
			return transport{}, fieldErrors(field+"typed_config.", err)
		}
		inner, errs := buildTransportAt(m.GetTransportSocket(), d, scope, field+"typed_config.transport_socket.")
		if inner.h11 != nil || inner.iu != nil {
			errs = append(errs, configErrorf(field+"typed_config.transport_socket", "an http_11_proxy transport socket cannot wrap another, nor internal_upstream"))
		}
		if len(errs) > 0 {
			inner.close()
			return transport{}, errs
		}
		inner.h11 = h11
		return inner, nil
	case *tcpstatsv3.Config:
		if d.stats == nil {
			return transport{}, []error{configErrorf(field+"typed_config", "no stat store for the tcp_stats transport socket")}
		}
		ts, err := tcpstats.Compile(m, d.stats.Scope(scope))
		if err != nil {
			return transport{}, []error{configErrorf(field+"typed_config", "%v", err)}
		}
		inner, errs := buildTransportAt(m.GetTransportSocket(), d, scope, field+"typed_config.transport_socket.")
		if inner.tcpStats != nil || inner.iu != nil {
			errs = append(errs, configErrorf(field+"typed_config.transport_socket", "a tcp_stats transport socket cannot wrap another, nor internal_upstream"))
		}
		if len(errs) > 0 {
			inner.close()
			return transport{}, errs
		}
		inner.tcpStats = ts
		return inner, nil
	case *iuv3.InternalUpstreamTransport:
		if d.stats == nil {
			return transport{}, []error{configErrorf(field+"typed_config", "no stat store for the internal_upstream transport socket")}
		}
		iu, errs := compileInternalUpstream(m, d.stats.Scope(scope), field)
		inner, ierrs := buildTransportAt(m.GetTransportSocket(), d, scope, field+"typed_config.transport_socket.")
		errs = append(errs, ierrs...)
		if inner != (transport{}) {
			// Only raw_buffer inside: what it wraps would run over the
			// in-memory connection, which nothing here does yet.
			inner.close()
			errs = append(errs, configErrorf(field+"typed_config.transport_socket", "not supported by Outrigger: only raw_buffer inside internal_upstream"))
		}
		if len(errs) > 0 {
			return transport{}, errs
		}
		return transport{iu: iu}, nil
	case *tlsv3.UpstreamTlsContext:
		cl, err := tlsconfig.CompileClientWithSecrets(m, d.secrets, d.keyLog)
		if err != nil {
			return transport{}, fieldErrors(field+"typed_config.", err)
		}
		return transport{tls: cl}, nil
	}
	return transport{}, []error{configErrorf(field+"typed_config", "transport socket type %T is not supported by Outrigger", msg)}
}

// close releases what t holds (its tap).
func (t transport) close() {
	if t.tap != nil {
		_ = t.tap.Close()
	}
}

// ppKey is the part of the downstream side in ctx that a connection of
// the cluster's upstream PROXY protocol transport socket is shared by
// (the zero value on a cluster without one, or without a downstream).
func (c *Cluster) ppKey(ctx context.Context) upstream.ProxyProtocolData {
	if c.settings.pp == nil {
		return upstream.ProxyProtocolData{}
	}
	d, _ := upstream.ProxyProtocolFrom(ctx)
	return c.settings.pp.PoolKey(d)
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
// with auto_sni, the host's name; a context with auto_host_sni falls back
// on the host's hostname. The connection is closed when it fails.
// It also returns what the access log shows of the connection.
func (c *Cluster) handshake(ctx context.Context, conn net.Conn, alpn []string, h *upstream.Host) (net.Conn, *accesslog.TLSInfo, error) {
	ov := tlsconfig.OverrideFrom(ctx)
	if d := c.settings.dfp; d != nil && d.autoSNI {
		ov = c.settings.tls.HostOverride(dfpServerName(h))
	}
	if h != nil {
		ov.HostName = h.Hostname
	}
	tc, local, err := c.tlsOf(h).HandshakeWith(ctx, conn, alpn, ov, c.ssl)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return tc, tlsconfig.ConnInfo(tc.ConnectionState(), local), nil
}

// sendProxyHeader writes the PROXY protocol header a new connection
// starts with, on a cluster with the upstream PROXY protocol transport
// socket: ahead of everything, the TLS handshake included. The downstream
// side comes from ctx (a TCP proxy's connection); without it the header
// describes the connection itself (v1) or is a LOCAL one (v2), as in
// Envoy. The connection is closed when the write fails.
func (c *Cluster) sendProxyHeader(ctx context.Context, conn net.Conn) error {
	if c.settings.pp == nil {
		return nil
	}
	d, ok := upstream.ProxyProtocolFrom(ctx)
	if dl, has := ctx.Deadline(); has {
		_ = conn.SetWriteDeadline(dl)
		defer func() { _ = conn.SetWriteDeadline(time.Time{}) }()
	}
	if _, err := conn.Write(c.settings.pp.Header(conn, d, ok)); err != nil {
		_ = conn.Close()
		return err
	}
	return nil
}

// tapped is conn through the cluster's tap transport socket, when it has
// one: the tap sees the plaintext (what TLS decrypted).
func (c *Cluster) tapped(conn net.Conn) net.Conn {
	if c.settings.tap == nil {
		return conn
	}
	return c.settings.tap.Wrap(conn, conn.LocalAddr(), conn.RemoteAddr())
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
