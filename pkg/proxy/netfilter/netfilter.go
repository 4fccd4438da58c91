// Package netfilter is the network filter interface, in the style of
// Envoy's: a filter chain is zero or more read filters, which look at each
// new connection and may close it, then one terminal filter, which takes
// the connection over until it ends (the HTTP connection manager,
// tcp_proxy). Network filters are extensions of the category
// envoy.filters.network; each compiles its configuration once, with a
// Factory, into a Filter the listener's chain runs for every connection.
package netfilter

import (
	"context"
	"net"
	"net/http"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Category is Envoy's extension category of network filters.
const Category = "envoy.filters.network"

// Factory compiles a network filter's configuration (its typed_config
// message). Errors name the field path below typed_config.
type Factory interface {
	Compile(config proto.Message, ctx Context) (Filter, error)
}

// Filter is a compiled network filter: a ReadFilter or a DataFilter, or a
// Terminal that ends its chain.
type Filter any

// ReadFilter sees each new connection before the terminal filter does.
type ReadFilter interface {
	// OnNewConnection looks at a new connection, on the connection's
	// goroutine, and returns nil to let it go on to the next filter, or
	// why it stops it: the chain then has the terminal filter account for
	// it (see RefusalRecorder) and closes it. A filter that holds a
	// connection before refusing it returns when it is done.
	OnNewConnection(c Conn) *Refusal
}

// DataFilter is a read filter that decides when the connection's data
// starts to flow, after its TLS handshake (Envoy's onData), rather than when
// it is made: RBAC reads the peer's certificate. OnData runs on the
// connection's goroutine, after every ReadFilter admitted the connection,
// and returns nil to let it go on or why it stops it (see ReadFilter).
type DataFilter interface {
	OnData(c net.Conn) *Refusal
}

// Conn is a connection as read filters see it: the listener's, whose
// close they can follow.
type Conn interface {
	net.Conn
	// OnClose arranges for f to run once the connection is closed, on the
	// goroutine that closes it first (at once if it is closed already).
	OnClose(f func())
}

// Refusal is why a read filter stopped a connection: what the terminal
// filter records of it.
type Refusal struct {
	// Flags are the response flags of the connection's access log entry
	// (%RESPONSE_FLAGS%).
	Flags accesslog.ResponseFlags
	// Reason is Envoy's local close reason ("over_connection_limit").
	Reason string
}

// RefusalRecorder is a terminal filter that accounts for the connections
// its chain refused before handing them over. Envoy makes every filter of
// a chain for each connection, so its terminal filters count and log
// those connections too; Refused does the same, on the connection's
// goroutine, before the chain closes c.
type RefusalRecorder interface {
	Refused(c net.Conn, r *Refusal)
}

// Terminal is the last filter of a chain: it serves a connection to its
// end and closes it. HandleConn starts on the connection's own goroutine
// and may return before the connection ends when the filter goes on
// serving it elsewhere (the HTTP connection manager parks idle HTTP/1
// connections without a goroutine).
type Terminal interface {
	HandleConn(c net.Conn)
	// Close stops taking connections and lets the open ones end the way
	// the filter ends them on a drain; it returns at once.
	Close() error
	// Shutdown closes the filter (see Close) and waits, until ctx ends at
	// the latest, for its connections to be gone; then it cuts the ones
	// left and returns ctx's error.
	Shutdown(ctx context.Context) error
}

// Context is what network filters get from the server.
type Context struct {
	// Stats is the server's stat store.
	Stats *stats.Store
	// Log is the filter's component logger.
	Log logr.Logger
	// Clusters finds upstream clusters by name.
	Clusters Clusters
	// OnDemand discovers clusters that are not there (on-demand CDS);
	// nil when the server has no incremental ADS stream.
	OnDemand OnDemandClusters
	// AccessLogs compiles an access_log list with the server's access
	// loggers; errors name the field path from prefix.
	AccessLogs func(prefix string, cfgs []*accesslogv3.AccessLog) (AccessLogger, error)
	// Now is the clock of recorded times; nil means time.Now.
	Now func() time.Time
	// Runtime reads runtime feature flags (runtime_enabled); nil reads
	// none.
	Runtime runtime.BoolReader
	// Shared holds the values filters share across filter chains and
	// listeners (local_ratelimit's share_key buckets); nil shares none.
	Shared *Shared
	// State is what the filter keeps across listener updates that keep its
	// filter chain (connection counts, token buckets); nil keeps nothing.
	State *State
	// OpenGRPC checks a GrpcService and opens its channel, for the
	// filters that call a service (the rate limit service); errors name
	// the field below the GrpcService. Nil reaches none.
	OpenGRPC func(gs *corev3.GrpcService) (*grpcservice.Channel, error)
	// Extensions resolves the extensions a filter's configuration names
	// (tcp_proxy's request id extension and formatters); nil resolves
	// none.
	Extensions *extension.Registry
	// Drain is the listener's drain, which check_drain_close consults;
	// nil never drains.
	Drain Drainer
	// NodeMetadata is the bootstrap node's metadata (ext_authz's
	// bootstrap_metadata_labels_key); nil when it has none.
	NodeMetadata *structpb.Struct
}

// Drainer is a listener's drain as a network filter sees it.
type Drainer interface {
	// DrainClose reports whether a connection should close now because
	// its listener drains (Envoy's drainClose, gradual over the drain
	// time).
	DrainClose() bool
}

// Clusters finds the cluster a filter sends a connection to.
type Clusters interface {
	// Cluster returns the named cluster, or nil when there is none.
	Cluster(name string) Cluster
}

// OnDemandClusters discovers clusters on demand, as Envoy's ODCDS: the
// management server is asked for a cluster when a connection needs it.
type OnDemandClusters interface {
	// Discover asks for the cluster name and waits until it is in
	// service (true), or timeout passes or ctx ends (false).
	Discover(ctx context.Context, name string, timeout time.Duration) bool
}

// Cluster is what a network filter needs of an upstream cluster.
type Cluster interface {
	Name() string
	// Metadata is the cluster's metadata (%CLUSTER_METADATA%), nil when
	// it has none.
	Metadata() *corev3.Metadata
	// PickHost chooses a host with the cluster's load balancer, or nil
	// when none can take the connection.
	// pc is the connection's downstream side (an ORIGINAL_DST cluster
	// connects to its original destination).
	PickHost(pc *upstream.PickContext) *upstream.Host
	// ConnectHost opens a connection to h within the cluster's
	// connect_timeout, counted in the cluster's stats. The connection
	// supports CloseWrite() error and NetConn() net.Conn.
	ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error)
	// Stats are the cluster's stats ("cluster.<name>.").
	Stats() *upstream.ClusterStats
	// ObservabilityName is the name of the cluster's stat scope.
	ObservabilityName() string
	// HTTP2 reports whether the cluster speaks HTTP/2 upstream (for
	// tunnels through HTTP proxies).
	HTTP2() bool
	// RoundTripHTTP2 sends req to h over the cluster's HTTP/2
	// connections (a tunnel's CONNECT or POST stream).
	RoundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error)
}

// AccessLogger is a compiled access_log list (a *loggers.List).
type AccessLogger interface {
	// Empty reports whether the list logs nothing.
	Empty() bool
	// Log records e with every logger whose filter accepts it; buf is
	// scratch space, returned for reuse.
	Log(buf []byte, e *accesslog.Entry) ([]byte, error)
	// Close delivers what the loggers buffer and closes them.
	Close() error
}
