// Package celattrs gives CEL expressions (package cel) the attributes of
// an access log entry: what the entry knows, the rest absent. The
// access-log CEL filter and the CEL formatter (%CEL%, %TYPED_CEL%)
// evaluate their expressions over them.
package celattrs

import (
	"crypto/x509"
	"net/netip"
	"net/url"
	"strconv"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// Attributes are one evaluation's attributes: the activation and the
// groups it points to, kept together so that a pooled value fills them
// without allocating.
type Attributes struct {
	act  cel.Activation
	req  cel.Request
	resp cel.Response
	conn cel.Connection
	up   cel.Upstream
	xds  cel.XDS
}

// Fill sets the attributes of e and returns the activation to evaluate
// over; the previous ones are dropped.
func (st *Attributes) Fill(e *accesslog.Entry) *cel.Activation {
	*st = Attributes{}
	st.fill(e)
	return &st.act
}

// Reset drops the entry's references, before the value is pooled.
func (st *Attributes) Reset() { *st = Attributes{} }

// fill sets the attributes of e: what the entry knows, the rest absent.
func (st *Attributes) fill(e *accesslog.Entry) {
	a := &st.act
	st.req = cel.Request{
		Path: e.Path, Host: e.Authority, Scheme: e.Scheme, Method: e.Method,
		Protocol: e.Protocol, Time: e.StartTime,
		Duration: e.Duration, HasDuration: !e.StartTime.IsZero(),
	}
	if e.RequestHeaders != nil {
		st.req.Headers = e.RequestHeaders
	} else {
		st.req.Headers = noHeaders{}
	}
	a.Request = &st.req
	st.resp = cel.Response{
		Code: e.ResponseCode, CodeDetails: e.ResponseCodeDetails, Flags: uint64(e.ResponseFlags),
	}
	if e.ResponseHeaders != nil {
		st.resp.Headers = e.ResponseHeaders
	}
	if e.ResponseTrailers != nil {
		st.resp.Trailers = e.ResponseTrailers
	}
	st.resp.GRPCStatus, st.resp.HasGRPCStatus = grpcStatus(e)
	a.Response = &st.resp
	a.Source, _ = netip.ParseAddrPort(e.DownstreamRemoteAddress)
	a.Destination, _ = netip.ParseAddrPort(e.DownstreamLocalAddress)
	st.conn = cel.Connection{ID: e.ConnectionID, RequestedServerName: e.RequestedServerName}
	if t := e.TLS; t != nil {
		st.conn.TLS, st.conn.TLSVersion = true, t.Version
		st.conn.LocalSubject = t.LocalSubject()
		if lc := t.LocalCertificate; lc != nil {
			st.conn.LocalURISAN, st.conn.LocalDNSSAN = firstURI(lc), firstDNS(lc)
		}
		if pc := t.PeerCertificate; pc != nil {
			st.conn.MTLS = true
			st.conn.PeerSubject = t.PeerSubject()
			st.conn.PeerURISAN, st.conn.PeerDNSSAN = firstURI(pc), firstDNS(pc)
		}
	}
	a.Connection = &st.conn
	if ap, err := netip.ParseAddrPort(e.UpstreamHost); err == nil {
		st.up.Address = ap
		a.Upstream = &st.up
	}
	st.xds = cel.XDS{
		ClusterName: e.UpstreamCluster, RouteName: e.RouteName, FilterChainName: e.FilterChainName,
		ClusterMetadata: e.ClusterMetadata,
	}
	a.XDS = &st.xds
	a.Metadata = e.DynamicMetadata
}

// grpcStatus is the grpc-status of the response's trailers, else of its
// headers (a trailers-only response); absent when neither has one.
func grpcStatus(e *accesslog.Entry) (int, bool) {
	for _, h := range [...]accesslog.HeaderGetter{e.ResponseTrailers, e.ResponseHeaders} {
		if h == nil {
			continue
		}
		if v, ok := h.Get("grpc-status"); ok {
			n, err := strconv.ParseUint(v, 10, 31)
			return int(n), err == nil
		}
	}
	return 0, false
}

// noHeaders is the header map of an entry without request headers (a
// connection-level log): every header is absent.
type noHeaders struct{}

func (noHeaders) Get(string) (string, bool) { return "", false }

func firstURI(c *x509.Certificate) string {
	if len(c.URIs) == 0 {
		return ""
	}
	return (*url.URL).String(c.URIs[0])
}

func firstDNS(c *x509.Certificate) string {
	if len(c.DNSNames) == 0 {
		return ""
	}
	return c.DNSNames[0]
}
