// Package grpcservice opens the gRPC channels that GrpcService
// configurations name, for the extensions that call gRPC services (the
// gRPC access log service, and later tracing collectors and authorization
// services). An envoy_grpc service reaches a cluster of the configuration:
// every connection the channel opens goes to a host the cluster's load
// balancer picks, counted in the cluster's stats. A google_grpc service
// reaches its target URI directly.
package grpcservice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Cluster is a cluster as a channel dials it.
type Cluster interface {
	// Connect opens a connection to one of the cluster's hosts.
	Connect(ctx context.Context) (net.Conn, error)
}

// Context is what opening a channel uses of the server.
type Context struct {
	// Cluster returns the named cluster, nil when there is none.
	Cluster func(name string) Cluster
	// LocalAddress is the server's own IP address (Envoy's local_info
	// address, see LocalAddress), which an envoy_grpc call carries in
	// x-forwarded-for unless skip_envoy_headers; "" sends none.
	LocalAddress string
}

// Channel is an open gRPC channel with the call settings of its
// configuration.
type Channel struct {
	conn     *grpc.ClientConn
	timeout  time.Duration
	metadata metadata.MD
	// retryConfig is the service configuration of retry_policy, "" for
	// none.
	retryConfig string
	// reconnect is envoy_grpc.retry_policy's back-off, nil without one.
	reconnect *Backoff
	// Target names the service in logs: "cluster <name>" or the URI.
	Target string
	// spanCluster and spanAddress are the upstream_cluster and
	// upstream_address tags of a call's span (SpanTags).
	spanCluster, spanAddress string
}

// SpanTags are the upstream_cluster and upstream_address tags Envoy's
// asynchronous gRPC client gives a call's span: the cluster and the
// envoy_grpc authority (the cluster when none is set), or a google_grpc
// service's stat_prefix and target URI.
func (ch *Channel) SpanTags() (cluster, address string) { return ch.spanCluster, ch.spanAddress }

// Open checks a GrpcService and opens its channel; connections are made
// lazily, by the first call. Errors name the field path below the
// GrpcService ("envoy_grpc.cluster_name: ...").
func Open(gs *corev3.GrpcService, ctx Context) (*Channel, error) {
	ch := &Channel{timeout: gs.GetTimeout().AsDuration()}
	if gs.GetTimeout() != nil && ch.timeout < 0 {
		return nil, errors.New("timeout: must not be negative")
	}
	if rp := gs.GetRetryPolicy(); rp != nil {
		sc, err := retryServiceConfig(rp)
		if err != nil {
			return nil, fmt.Errorf("retry_policy.%w", err)
		}
		// As Envoy's, only envoy_grpc clients apply it (google_grpc
		// ones ignore it, as Envoy's Google gRPC client does).
		if gs.GetEnvoyGrpc() != nil {
			ch.retryConfig = sc
		}
	}
	if len(gs.GetInitialMetadata()) > 0 {
		ch.metadata = metadata.MD{}
		for i, hv := range gs.GetInitialMetadata() {
			key := strings.ToLower(hv.GetKey())
			if key == "" {
				return nil, fmt.Errorf("initial_metadata[%d].key: must be set", i)
			}
			if strings.HasPrefix(key, ":") || key == "host" {
				return nil, fmt.Errorf("initial_metadata[%d].key: %q cannot be set (pseudo-headers and host are reserved)", i, hv.GetKey())
			}
			if hv.GetRawValue() != nil {
				ch.metadata.Append(key, string(hv.GetRawValue()))
			} else {
				ch.metadata.Append(key, hv.GetValue())
			}
		}
	}
	var err error
	switch t := gs.GetTargetSpecifier().(type) {
	case *corev3.GrpcService_EnvoyGrpc_:
		err = ch.openCluster(t.EnvoyGrpc, ctx)
	case *corev3.GrpcService_GoogleGrpc_:
		err = ch.openTarget(t.GoogleGrpc)
	default:
		err = errors.New("target_specifier: one of envoy_grpc or google_grpc is required")
	}
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// openCluster opens a channel whose connections go to a cluster's hosts.
func (ch *Channel) openCluster(eg *corev3.GrpcService_EnvoyGrpc, ctx Context) error {
	name := eg.GetClusterName()
	if name == "" {
		return errors.New("envoy_grpc.cluster_name: must be set")
	}
	if rp := eg.GetRetryPolicy(); rp != nil {
		// Envoy honours it for the xDS streams only: the back-off of
		// their reconnections (ReconnectBackoff).
		b, err := CompileBackoff(rp)
		if err != nil {
			return fmt.Errorf("envoy_grpc.retry_policy.%w", err)
		}
		ch.reconnect = &b
	}
	var cl Cluster
	if ctx.Cluster != nil {
		cl = ctx.Cluster(name)
	}
	if cl == nil {
		return fmt.Errorf("envoy_grpc.cluster_name: unknown gRPC client cluster '%s'", name)
	}
	authority := eg.GetAuthority()
	if authority == "" {
		// Envoy sends the cluster's name as the :authority.
		authority = name
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(authority),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return cl.Connect(ctx) }),
	}
	if n := eg.GetMaxReceiveMessageLength().GetValue(); n > 0 {
		// 0 (Envoy's unlimited) keeps the client's bound.
		l := recvLimit(min(n, math.MaxInt32))
		opts = append(opts, grpc.WithChainUnaryInterceptor(l.unary), grpc.WithChainStreamInterceptor(l.stream))
	}
	if !eg.GetSkipEnvoyHeaders() {
		h := envoyHeaders(ctx.LocalAddress)
		opts = append(opts, grpc.WithChainUnaryInterceptor(h.unary), grpc.WithChainStreamInterceptor(h.stream))
	}
	if ch.retryConfig != "" {
		opts = append(opts, grpc.WithDefaultServiceConfig(ch.retryConfig))
	}
	conn, err := grpc.NewClient("passthrough:///"+name, opts...)
	if err != nil {
		return fmt.Errorf("envoy_grpc: %w", err)
	}
	ch.conn, ch.Target = conn, "cluster "+name
	ch.spanCluster, ch.spanAddress = name, authority
	return nil
}

// openTarget opens a channel to a URI, in cleartext: channel credentials
// are refused.
func (ch *Channel) openTarget(gg *corev3.GrpcService_GoogleGrpc) error {
	switch {
	case gg.GetTargetUri() == "":
		return errors.New("google_grpc.target_uri: must be set")
	case gg.GetStatPrefix() == "":
		return errors.New("google_grpc.stat_prefix: must be set")
	case gg.GetChannelCredentials() != nil:
		return errors.New("google_grpc.channel_credentials: not supported by Outrigger (the channel is cleartext)")
	case len(gg.GetCallCredentials()) > 0:
		return errors.New("google_grpc.call_credentials: not supported by Outrigger")
	case gg.GetCredentialsFactoryName() != "":
		return errors.New("google_grpc.credentials_factory_name: not supported by Outrigger")
	case gg.GetConfig() != nil:
		return errors.New("google_grpc.config: not supported by Outrigger")
	case gg.GetPerStreamBufferLimitBytes() != nil:
		return errors.New("google_grpc.per_stream_buffer_limit_bytes: not supported by Outrigger")
	case gg.GetChannelArgs() != nil:
		return errors.New("google_grpc.channel_args: not supported by Outrigger")
	}
	conn, err := grpc.NewClient(gg.GetTargetUri(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("google_grpc.target_uri: %w", err)
	}
	ch.conn, ch.Target = conn, gg.GetTargetUri()
	ch.spanCluster, ch.spanAddress = gg.GetStatPrefix(), gg.GetTargetUri()
	return nil
}

// ReconnectBackoff is envoy_grpc.retry_policy's retry_back_off, which
// Envoy applies to the reconnections of xDS streams; ok is false without
// one.
func (ch *Channel) ReconnectBackoff() (b Backoff, ok bool) {
	if ch.reconnect == nil {
		return Backoff{}, false
	}
	return *ch.reconnect, true
}

// Conn is the channel, for generated clients.
func (ch *Channel) Conn() *grpc.ClientConn { return ch.conn }

// CallContext returns a context for one call: the configured timeout and
// initial metadata applied to parent, then the metadata parent carries
// for the call (WithCallMetadata), which replaces initial metadata of the
// same keys. A timeout of 0 means none, which is what a long-lived stream
// wants (streams ignore the timeout in Envoy).
func (ch *Channel) CallContext(parent context.Context, stream bool) (context.Context, context.CancelFunc) {
	ctx := parent
	if extra, _ := parent.Value(callMetadataKey{}).(metadata.MD); len(extra) > 0 {
		md := ch.metadata.Copy()
		for k, v := range extra {
			md[k] = v
		}
		ctx = metadata.NewOutgoingContext(ctx, md)
	} else if len(ch.metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, ch.metadata)
	}
	if ch.timeout > 0 && !stream {
		return context.WithTimeout(ctx, ch.timeout)
	}
	return context.WithCancel(ctx)
}

// Close closes the channel's connections.
func (ch *Channel) Close() error { return ch.conn.Close() }
