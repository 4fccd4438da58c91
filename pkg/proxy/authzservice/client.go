// Package authzservice is the client of the external authorization
// service that the ext_authz filters call (envoy.filters.http.ext_authz,
// envoy.filters.network.ext_authz): the gRPC method
// envoy.service.auth.v3.Authorization/Check, as Envoy's
// filters/common/ext_authz gRPC client speaks it, and the parts of a
// CheckRequest both filters make alike (peers, node labels, metadata
// namespaces).
package authzservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// DefaultTimeout is Envoy's timeout of a check when the GrpcService sets
// none.
const DefaultTimeout = 200 * time.Millisecond

// Opener opens a GrpcService's channel (the server's); errors name the
// field below the GrpcService.
type Opener func(gs *corev3.GrpcService) (*grpcservice.Channel, error)

// Client calls one gRPC authorization service.
type Client struct {
	ch     *grpcservice.Channel
	client authv3.AuthorizationClient
}

// Open opens the gRPC authorization service gs. The timeout it returns is
// the GrpcService's, else def. Errors name the field below the
// GrpcService.
func Open(gs *corev3.GrpcService, open Opener, def time.Duration) (*Client, time.Duration, error) {
	if open == nil {
		return nil, 0, errors.New("no gRPC service can be reached")
	}
	timeout := def
	if gs.GetTimeout() != nil {
		timeout = gs.GetTimeout().AsDuration()
	}
	ch, err := open(gs)
	if err != nil {
		return nil, 0, err
	}
	return &Client{ch: ch, client: authv3.NewAuthorizationClient(ch.Conn())}, timeout, nil
}

// Check calls the service with req, with the channel's initial metadata;
// ctx carries the caller's timeout.
func (c *Client) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	ctx, cancel := c.ch.CallContext(ctx, true)
	defer cancel()
	return c.client.Check(ctx, req)
}

// SpanTags are the upstream_cluster and upstream_address tags of a
// check's span (grpcservice.Channel.SpanTags).
func (c *Client) SpanTags() (cluster, address string) { return c.ch.SpanTags() }

// Close closes the service's channel.
func (c *Client) Close() error { return c.ch.Close() }

// Status is the outcome of a check.
type Status uint8

const (
	// OK: the service allows.
	OK Status = iota
	// Denied: the service denies.
	Denied
	// Error: the service answered with an error_response (or the call
	// failed, which callers see as an error from Check).
	Error
)

// Outcome reads a CheckResponse's status as Envoy's gRPC client does: an
// OK status allows; an error_response is an error; any other status
// denies.
func Outcome(resp *authv3.CheckResponse) Status {
	switch {
	case codes.Code(resp.GetStatus().GetCode()) == codes.OK:
		return OK
	case resp.GetErrorResponse() != nil:
		return Error
	}
	return Denied
}

// DynamicMetadata is the dynamic metadata of an answer: the response's
// own, or, for an allowing answer that sets it, the deprecated
// OkHttpResponse.dynamic_metadata in its place, as in Envoy. Nil when
// there is none.
func DynamicMetadata(resp *authv3.CheckResponse) *structpb.Struct {
	md := resp.GetDynamicMetadata()
	//lint:ignore SA1019 Envoy still reads the deprecated field
	if ok := resp.GetOkResponse().GetDynamicMetadata(); ok != nil && Outcome(resp) == OK {
		md = ok
	}
	return md
}

// CheckTransportVersion accepts the transport_api_version values
// Outrigger speaks: V3, and AUTO (which is V3).
func CheckTransportVersion(v corev3.ApiVersion) error {
	switch v {
	case corev3.ApiVersion_AUTO, corev3.ApiVersion_V3:
		return nil
	}
	return fmt.Errorf("transport_api_version: %s is not supported (V3 only)", v)
}
