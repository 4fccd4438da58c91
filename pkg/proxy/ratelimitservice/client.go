// Package ratelimitservice is the client of the rate limit service that
// the global rate limit filters (envoy.filters.http.ratelimit,
// envoy.filters.network.ratelimit) call: the gRPC method
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, as Envoy's
// filters/common/ratelimit client speaks it. One call carries a domain and
// the descriptors of a request or a connection; the answer is OK,
// OVER_LIMIT, or an error (the call failed or timed out).
package ratelimitservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlconfv3 "github.com/envoyproxy/go-control-plane/envoy/config/ratelimit/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// DefaultTimeout is Envoy's timeout of a call when the filter sets none.
const DefaultTimeout = 20 * time.Millisecond

// Status is the outcome of a call.
type Status uint8

const (
	// OK: no descriptor is over its limit.
	OK Status = iota
	// OverLimit: a descriptor is over its limit.
	OverLimit
	// Error: the call failed, timed out or was cancelled.
	Error
)

// Descriptor is one descriptor of a call: its entries and, when the rate
// limit entry has one, its limit override.
type Descriptor struct {
	Entries []router.DescriptorEntry
	Limit   *router.LimitOverride
	// UnitMultiplier is the limit override's unit_multiplier, 0 when
	// unset; only the network filter's descriptors have one.
	UnitMultiplier uint32
	// HitsAddend, with HasHitsAddend, is the descriptor's hits_addend:
	// the hits it counts, in place of the request's. IsNegativeHits
	// asks the service to give those hits back to the budget instead.
	HitsAddend     uint64
	HasHitsAddend  bool
	IsNegativeHits bool
}

// Response is the service's answer, as the filters use it.
type Response struct {
	Status Status
	// Statuses are the service's per-descriptor statuses (for the
	// x-ratelimit headers).
	Statuses []*rlsv3.RateLimitResponse_DescriptorStatus
	// ResponseHeaders and RequestHeaders are the headers the service
	// asks to add, names in lower case.
	ResponseHeaders, RequestHeaders [][2]string
	// Body is the service's raw_body, the body of a rate-limited reply.
	Body string
	// DynamicMetadata is the service's dynamic_metadata, nil when it
	// sent none.
	DynamicMetadata *structpb.Struct
}

// Opener opens a GrpcService's channel (the server's); errors name the
// field below the GrpcService.
type Opener func(gs *corev3.GrpcService) (*grpcservice.Channel, error)

// Client calls one rate limit service.
type Client struct {
	ch      *grpcservice.Channel
	rls     rlsv3.RateLimitServiceClient
	timeout time.Duration
}

// Open checks a RateLimitServiceConfig and opens its channel. timeout is
// the filter's timeout field: unset means DefaultTimeout, 0 none. Errors
// name the field below the filter's configuration.
func Open(svc *rlconfv3.RateLimitServiceConfig, timeout *durationpb.Duration, open Opener) (*Client, error) {
	if svc == nil {
		return nil, errors.New("rate_limit_service: must be set")
	}
	if v := svc.GetTransportApiVersion(); v != corev3.ApiVersion_V3 {
		// Envoy's checkTransportVersion: only an explicit V3.
		return nil, fmt.Errorf("rate_limit_service.transport_api_version: %s is not supported; the V2 (and AUTO) transport protocol versions are deprecated: set V3", v)
	}
	if svc.GetGrpcService() == nil {
		return nil, errors.New("rate_limit_service.grpc_service: must be set")
	}
	c := &Client{timeout: DefaultTimeout}
	if timeout != nil {
		if err := timeout.CheckValid(); err != nil || timeout.AsDuration() < 0 {
			return nil, errors.New("timeout: must be a valid, non-negative duration")
		}
		c.timeout = timeout.AsDuration().Truncate(time.Millisecond) // Envoy's milliseconds
	}
	if open == nil {
		return nil, errors.New("rate_limit_service.grpc_service: no gRPC service can be reached")
	}
	ch, err := open(svc.GetGrpcService())
	if err != nil {
		return nil, fmt.Errorf("rate_limit_service.grpc_service.%w", err)
	}
	c.ch, c.rls = ch, rlsv3.NewRateLimitServiceClient(ch.Conn())
	return c, nil
}

// Limit asks the service whether the descriptors of req (see Request) are
// over their limits, within the timeout (and ctx). Any failure is an
// Error.
func (c *Client) Limit(ctx context.Context, req *rlsv3.RateLimitRequest) *Response {
	// The channel's initial metadata; the filter's timeout, not the
	// GrpcService's, bounds the call, as in Envoy.
	ctx, cancel := c.ch.CallContext(ctx, true)
	defer cancel()
	if c.timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, c.timeout)
		defer cancelT()
	}
	resp, err := c.rls.ShouldRateLimit(ctx, req)
	if err != nil {
		return &Response{Status: Error}
	}
	r := &Response{
		Status:          OK,
		Statuses:        resp.GetStatuses(),
		ResponseHeaders: headersOf(resp.GetResponseHeadersToAdd()),
		RequestHeaders:  headersOf(resp.GetRequestHeadersToAdd()),
		Body:            string(resp.GetRawBody()),
		DynamicMetadata: resp.GetDynamicMetadata(),
	}
	// Envoy treats UNKNOWN as OK (it asserts it never comes).
	if resp.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT {
		r.Status = OverLimit
	}
	return r
}

// Request is the RateLimitRequest of a call, as Envoy's createRequest
// makes it: the request's hits_addend is 0 (the service counts one hit,
// or a descriptor's own hits_addend, given back with is_negative_hits).
func Request(domain string, descriptors []Descriptor) *rlsv3.RateLimitRequest {
	req := &rlsv3.RateLimitRequest{Domain: domain, Descriptors: make([]*commonv3.RateLimitDescriptor, 0, len(descriptors))}
	for _, d := range descriptors {
		pd := &commonv3.RateLimitDescriptor{Entries: make([]*commonv3.RateLimitDescriptor_Entry, 0, len(d.Entries))}
		for _, e := range d.Entries {
			pd.Entries = append(pd.Entries, &commonv3.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value})
		}
		if d.Limit != nil {
			pd.Limit = &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: d.Limit.RequestsPerUnit, Unit: d.Limit.Unit}
			if d.UnitMultiplier > 0 {
				pd.Limit.UnitMultiplier = wrapperspb.UInt32(d.UnitMultiplier)
			}
		}
		if d.HasHitsAddend {
			pd.HitsAddend = wrapperspb.UInt64(d.HitsAddend)
		}
		pd.IsNegativeHits = d.IsNegativeHits
		req.Descriptors = append(req.Descriptors, pd)
	}
	return req
}

// headersOf copies the service's headers, names in lower case.
func headersOf(hs []*corev3.HeaderValue) [][2]string {
	if len(hs) == 0 {
		return nil
	}
	out := make([][2]string, 0, len(hs))
	for _, h := range hs {
		v := h.GetValue()
		if v == "" && len(h.GetRawValue()) > 0 {
			v = string(h.GetRawValue())
		}
		out = append(out, [2]string{lowerASCII(h.GetKey()), v})
	}
	return out
}

// lowerASCII lower-cases a header name.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Close closes the service's channel.
func (c *Client) Close() error { return c.ch.Close() }
