package upstream

import (
	"context"
	"net"
	"net/netip"
)

// Source is the local side an upstream connection must be made with on
// behalf of one downstream: the original_src filters' choice, Envoy's
// original source socket options. The connection binds Addr (port 0) with
// IP_TRANSPARENT, so that the upstream sees the downstream's address, and
// carries Mark as SO_MARK when it is not 0, for the policy routing that
// brings the upstream's replies back to the proxy. Connections are shared
// only between requests with the same Source, as Envoy keys its pools by
// socket options.
type Source struct {
	Addr netip.Addr
	Mark uint32
}

// SourceFromAddr is the Source of a downstream whose remote address is a,
// false for an address that is not IP (a unix socket's), for which Envoy's
// filters do nothing. An IPv4 address seen on a dual-stack socket binds as
// IPv4.
func SourceFromAddr(a net.Addr, mark uint32) (Source, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return Source{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return Source{}, false
	}
	return Source{Addr: ip.Unmap().WithZone(ta.Zone), Mark: mark}, true
}

// sourceKey is the context key of a Source.
type sourceKey struct{}

// WithSource returns ctx carrying s, for the upstream connection the
// request or downstream connection needs; an invalid s returns ctx itself.
func WithSource(ctx context.Context, s Source) context.Context {
	if !s.Addr.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, sourceKey{}, s)
}

// SourceFrom is the Source ctx carries, the zero Source when none.
func SourceFrom(ctx context.Context) Source {
	s, _ := ctx.Value(sourceKey{}).(Source)
	return s
}

// SourceConn is a downstream connection a listener filter (original_src)
// gave an upstream Source.
type SourceConn interface {
	UpstreamSource() (Source, bool)
}

// SourceOf returns the upstream Source of a downstream connection,
// looking through wrappers (TLS) that expose the connection they wrap with
// NetConn; false when no listener filter set one.
func SourceOf(c net.Conn) (Source, bool) {
	s, ok := wrapped[SourceConn](c)
	if !ok {
		return Source{}, false
	}
	return s.UpstreamSource()
}

// LocalConnectError is a connection attempt that failed on the proxy's
// side, before it reached the network: binding the Source's address
// (without CAP_NET_ADMIN, or an address the kernel refuses) or setting
// its socket options. Envoy closes such a connection locally (a local
// connection failure, cluster.<name>.bind_errors for a bind).
type LocalConnectError struct {
	// Reason is Envoy's transport failure reason: "failed to bind to
	// <addr>:0: <error>" for a bind, "" for a socket option (Envoy gives
	// none).
	Reason string
	// Bind is set for a failed bind.
	Bind bool
	Err  error
}

func (e *LocalConnectError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	return "failed to set the upstream socket options: " + e.Err.Error()
}

// Unwrap returns the system's error.
func (e *LocalConnectError) Unwrap() error { return e.Err }
