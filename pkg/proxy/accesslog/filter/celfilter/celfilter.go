// Package celfilter is the access-log extension filter
// envoy.access_loggers.extension_filters.cel: an entry is logged when a
// CEL expression over its attributes evaluates to true, as Envoy's
// ExpressionFilter decides (an evaluation error or a value that is not a
// boolean does not log). Istio's Telemetry API writes its access-log
// filters this way.
package celfilter

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"sync"

	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/filter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// Name is the extension's name, in the proxy. spelling (Envoy: envoy.).
const Name = "proxy.access_loggers.extension_filters.cel"

// Factory compiles the filter.
type Factory struct{}

var _ filter.ExtensionFactory = Factory{}

// Compile implements filter.ExtensionFactory.
func (Factory) Compile(config proto.Message) (filter.Filter, error) {
	c, ok := config.(*celv3.ExpressionFilter)
	if !ok {
		return nil, errors.New("not an ExpressionFilter")
	}
	if c.GetExpression() == "" {
		return nil, errors.New("expression: must be set")
	}
	env, err := cel.NewEnvWith(cel.OptionsOf(c.GetCelConfig()))
	if err != nil {
		return nil, fmt.Errorf("cel_config: %w", err)
	}
	prg, err := env.CompileText(c.GetExpression())
	if err != nil {
		return nil, fmt.Errorf("expression: %w", err)
	}
	return &exprFilter{prg: prg}, nil
}

// exprFilter is a compiled ExpressionFilter. Match runs on many goroutines
// at once: each evaluation takes its own state from the pool.
type exprFilter struct {
	prg  *cel.Program
	pool sync.Pool
}

// state is one evaluation's attributes.
type state struct {
	act  cel.Activation
	req  cel.Request
	resp cel.Response
	conn cel.Connection
	up   cel.Upstream
	xds  cel.XDS
}

// Match implements filter.Filter.
func (f *exprFilter) Match(e *accesslog.Entry) bool {
	st, _ := f.pool.Get().(*state)
	if st == nil {
		st = new(state)
	}
	*st = state{}
	st.fill(e)
	ok := f.prg.Matches(&st.act)
	*st = state{} // drop the entry's references before pooling
	f.pool.Put(st)
	return ok
}

// fill sets the attributes of e: what the entry knows, the rest absent.
func (st *state) fill(e *accesslog.Entry) {
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
