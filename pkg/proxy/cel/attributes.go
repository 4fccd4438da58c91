package cel

import (
	"net/netip"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// HeaderGetter reads a header map by lower-case name; several values of
// one name come back joined by ",", as Envoy joins them.
type HeaderGetter interface {
	Get(lowerCaseName string) (value string, ok bool)
}

// HeaderRanger is a HeaderGetter that can also list its fields, which an
// expression iterating over a header map needs.
type HeaderRanger interface {
	HeaderGetter
	Range(fn func(name, value string) bool)
}

// Activation is what an expression reads: the attributes of one stream.
// A nil group (Request, Response, Connection, Upstream, XDS) or an
// invalid address has none of its attributes, and reading one is an
// evaluation error. The caller fills it per evaluation (it is meant to
// live in the stream's state, not to be shared); the evaluation only
// reads it.
type Activation struct {
	Request  *Request
	Response *Response
	// Source is the downstream peer (source.address, source.port) and
	// Destination the downstream connection's local address.
	Source, Destination netip.AddrPort
	Connection          *Connection
	Upstream            *Upstream
	XDS                 *XDS
	// Metadata is the stream's dynamic metadata (metadata); nil reads as
	// empty metadata, as a stream always has some in Envoy.
	Metadata *corev3.Metadata

	// groups are the map values the top-level names resolve to, kept
	// here so that resolving one allocates nothing.
	groups [numGroups]lazyMap
	// requestHeaders, responseHeaders and responseTrailers are the
	// header maps' values, for the same reason.
	requestHeaders, responseHeaders, responseTrailers lazyMap
	// adapter turns the protobuf attributes into CEL values; Eval sets
	// it from the program's environment.
	adapter types.Adapter
}

// Request is the request attributes (request.*).
type Request struct {
	// Headers are the request headers (pseudo-headers excluded); id,
	// referer and useragent read them too.
	Headers HeaderGetter
	// Path is the :path, query included; Host the :authority.
	Path, Host, Scheme, Method string
	// Protocol is "HTTP/1.0", "HTTP/1.1", "HTTP/2" or "HTTP/3"; "" when
	// unknown.
	Protocol string
	// Time is when the first byte of the request arrived; the zero time
	// is absent.
	Time time.Time
	// Duration (request.duration) is the time the whole request took,
	// with HasDuration; Size is the request body's size and TotalSize the
	// request's size headers included, with HasSize. Before the request
	// is complete they are absent.
	Duration    time.Duration
	HasDuration bool
	Size        int64
	TotalSize   int64
	HasSize     bool
}

// Response is the response attributes (response.*).
type Response struct {
	// Code is the status code; 0 is absent (no response yet).
	Code int
	// CodeDetails is the response code details; "" is absent.
	CodeDetails string
	// Flags are Envoy's response flags as a bit set.
	Flags uint64
	// GRPCStatus is the gRPC status, with HasGRPCStatus.
	GRPCStatus    int
	HasGRPCStatus bool
	// Headers and Trailers; nil is absent.
	Headers, Trailers HeaderGetter
	// Size is the response body's size and TotalSize the response's
	// size headers included, with HasSize.
	Size, TotalSize int64
	HasSize         bool
}

// Connection is the downstream connection's attributes (connection.*).
type Connection struct {
	// ID is the connection's id.
	ID uint64
	// TLS reports a TLS connection; the TLS attributes below are absent
	// without it.
	TLS bool
	// MTLS reports that the client presented a certificate that was
	// validated.
	MTLS bool
	// RequestedServerName is the SNI the client sent ("" is an empty
	// string, as in Envoy).
	RequestedServerName string
	// TLSVersion is "TLSv1.2" or "TLSv1.3".
	TLSVersion string
	// LocalSubject and PeerSubject are the certificates' subjects (RFC
	// 2253); a peer subject is absent without a peer certificate.
	LocalSubject, PeerSubject string
	// The first URI and DNS SANs of each certificate; "" is absent.
	LocalURISAN, PeerURISAN, LocalDNSSAN, PeerDNSSAN string
	// TerminationDetails is why the connection was closed by a filter;
	// "" is absent.
	TerminationDetails string
}

// Upstream is the upstream connection's attributes (upstream.*).
type Upstream struct {
	// Address is the upstream host's address.
	Address netip.AddrPort
}

// XDS is the configuration attributes (xds.*).
type XDS struct {
	// Node is the bootstrap's node; nil is absent.
	Node *corev3.Node
	// ClusterName, RouteName, VirtualHostName and FilterChainName name
	// the configuration the stream went through; "" is absent.
	ClusterName, RouteName, VirtualHostName, FilterChainName string
	// ClusterMetadata and RouteMetadata are the cluster's and the route's
	// metadata; nil is absent.
	ClusterMetadata, RouteMetadata *corev3.Metadata
}

// groupKind is a top-level attribute name.
type groupKind uint8

const (
	groupRequest groupKind = iota
	groupResponse
	groupSource
	groupDestination
	groupConnection
	groupUpstream
	groupXDS
	numGroups
)

// topLevel are the top-level names an expression may read, in the
// order of groupKind, then the ones that are not maps of attributes.
var topLevel = [...]string{"request", "response", "source", "destination", "connection", "upstream", "xds", "metadata", "filter_state"}

// groupKeys are the attribute names of each group, for an expression
// that iterates over a group or prints it.
var groupKeys = [numGroups][]string{
	groupRequest:     {"path", "url_path", "host", "scheme", "method", "headers", "referer", "useragent", "time", "id", "protocol", "query", "duration", "size", "total_size"},
	groupResponse:    {"code", "code_details", "flags", "grpc_status", "headers", "trailers", "size", "total_size"},
	groupSource:      {"address", "port"},
	groupDestination: {"address", "port"},
	groupConnection: {"id", "mtls", "requested_server_name", "tls_version", "subject_local_certificate", "subject_peer_certificate",
		"dns_san_local_certificate", "dns_san_peer_certificate", "uri_san_local_certificate", "uri_san_peer_certificate", "termination_details"},
	groupUpstream: {"address", "port"},
	groupXDS:      {"node", "cluster_name", "cluster_metadata", "route_name", "route_metadata", "virtual_host_name", "filter_chain_name"},
}

// ResolveName implements interpreter.Activation: the top-level names.
// filter_state is not kept by Outrigger and never resolves, so that an
// expression reading it fails rather than sees nothing.
func (a *Activation) ResolveName(name string) (any, bool) {
	for k := groupKind(0); k < numGroups; k++ {
		if topLevel[k] == name {
			g := &a.groups[k]
			g.a, g.kind = a, k
			return g, true
		}
	}
	if name == "metadata" {
		if a.Metadata == nil {
			return &corev3.Metadata{}, true
		}
		return a.Metadata, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *Activation) Parent() interpreter.Activation { return nil }

// attribute is the value of one attribute of a group; ok is false when
// the stream does not have it.
func (a *Activation) attribute(k groupKind, name string) (ref.Val, bool) {
	switch k {
	case groupRequest:
		return a.requestAttribute(name)
	case groupResponse:
		return a.responseAttribute(name)
	case groupSource:
		return addressAttribute(a.Source, name)
	case groupDestination:
		return addressAttribute(a.Destination, name)
	case groupConnection:
		return a.connectionAttribute(name)
	case groupUpstream:
		if a.Upstream == nil {
			return nil, false
		}
		return addressAttribute(a.Upstream.Address, name)
	case groupXDS:
		return a.xdsAttribute(name)
	}
	return nil, false
}

func (a *Activation) requestAttribute(name string) (ref.Val, bool) {
	r := a.Request
	if r == nil {
		return nil, false
	}
	switch name {
	case "path":
		return nonEmpty(r.Path)
	case "url_path":
		if r.Path == "" {
			return nil, false
		}
		p, _, _ := strings.Cut(r.Path, "?")
		return types.String(p), true
	case "query":
		if r.Path == "" {
			return nil, false
		}
		_, q, _ := strings.Cut(r.Path, "?")
		return types.String(q), true
	case "host":
		return nonEmpty(r.Host)
	case "scheme":
		return nonEmpty(r.Scheme)
	case "method":
		return nonEmpty(r.Method)
	case "headers":
		return a.headerMap(&a.requestHeaders, r.Headers)
	case "referer":
		return header(r.Headers, "referer")
	case "useragent":
		return header(r.Headers, "user-agent")
	case "id":
		return header(r.Headers, "x-request-id")
	case "time":
		if r.Time.IsZero() {
			return nil, false
		}
		return types.Timestamp{Time: r.Time}, true
	case "protocol":
		return nonEmpty(r.Protocol)
	case "duration":
		if !r.HasDuration {
			return nil, false
		}
		return types.Duration{Duration: r.Duration}, true
	case "size":
		return types.Int(r.Size), r.HasSize
	case "total_size":
		return types.Int(r.TotalSize), r.HasSize
	}
	return nil, false
}

func (a *Activation) responseAttribute(name string) (ref.Val, bool) {
	r := a.Response
	if r == nil {
		return nil, false
	}
	switch name {
	case "code":
		return types.Int(r.Code), r.Code != 0
	case "code_details":
		return nonEmpty(r.CodeDetails)
	case "flags":
		return types.Int(int64(r.Flags)), true
	case "grpc_status":
		return types.Int(r.GRPCStatus), r.HasGRPCStatus
	case "headers":
		return a.headerMap(&a.responseHeaders, r.Headers)
	case "trailers":
		return a.headerMap(&a.responseTrailers, r.Trailers)
	case "size":
		return types.Int(r.Size), r.HasSize
	case "total_size":
		return types.Int(r.TotalSize), r.HasSize
	}
	return nil, false
}

func (a *Activation) connectionAttribute(name string) (ref.Val, bool) {
	c := a.Connection
	if c == nil {
		return nil, false
	}
	switch name {
	case "id":
		return types.Uint(c.ID), true
	case "mtls":
		return types.Bool(c.MTLS), true
	case "requested_server_name":
		return types.String(c.RequestedServerName), true
	case "termination_details":
		return nonEmpty(c.TerminationDetails)
	}
	if !c.TLS {
		return nil, false
	}
	switch name {
	case "tls_version":
		return nonEmpty(c.TLSVersion)
	case "subject_local_certificate":
		return nonEmpty(c.LocalSubject)
	case "subject_peer_certificate":
		return nonEmpty(c.PeerSubject)
	case "dns_san_local_certificate":
		return nonEmpty(c.LocalDNSSAN)
	case "dns_san_peer_certificate":
		return nonEmpty(c.PeerDNSSAN)
	case "uri_san_local_certificate":
		return nonEmpty(c.LocalURISAN)
	case "uri_san_peer_certificate":
		return nonEmpty(c.PeerURISAN)
	}
	return nil, false
}

func (a *Activation) xdsAttribute(name string) (ref.Val, bool) {
	x := a.XDS
	if x == nil {
		return nil, false
	}
	switch name {
	case "node":
		if x.Node == nil {
			return nil, false
		}
		return a.adapter.NativeToValue(x.Node), true
	case "cluster_name":
		return nonEmpty(x.ClusterName)
	case "route_name":
		return nonEmpty(x.RouteName)
	case "virtual_host_name":
		return nonEmpty(x.VirtualHostName)
	case "filter_chain_name":
		return nonEmpty(x.FilterChainName)
	case "cluster_metadata":
		if x.ClusterMetadata == nil {
			return nil, false
		}
		return a.adapter.NativeToValue(x.ClusterMetadata), true
	case "route_metadata":
		if x.RouteMetadata == nil {
			return nil, false
		}
		return a.adapter.NativeToValue(x.RouteMetadata), true
	}
	return nil, false
}

// headerMap is h as a CEL map kept in slot; absent when h is nil.
func (a *Activation) headerMap(slot *lazyMap, h HeaderGetter) (ref.Val, bool) {
	if h == nil {
		return nil, false
	}
	slot.h = h
	return slot, true
}

// addressAttribute is address ("ip:port") or port of an address.
func addressAttribute(ap netip.AddrPort, name string) (ref.Val, bool) {
	if !ap.IsValid() {
		return nil, false
	}
	switch name {
	case "address":
		return types.String(ap.String()), true
	case "port":
		return types.Int(ap.Port()), true
	}
	return nil, false
}

// nonEmpty is s, absent when empty.
func nonEmpty(s string) (ref.Val, bool) {
	return types.String(s), s != ""
}

// header is one header of h, absent when h does not have it.
func header(h HeaderGetter, name string) (ref.Val, bool) {
	if h == nil {
		return nil, false
	}
	v, ok := h.Get(name)
	if !ok {
		return nil, false
	}
	return types.String(v), true
}
