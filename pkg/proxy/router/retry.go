package router

import (
	"errors"
	"fmt"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	omitcanaryv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/omit_canary_hosts/v3"
	omitmetadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/omit_host_metadata/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	previousprioritiesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// RetryOn is a set of Envoy's retry conditions (retry_on,
// x-envoy-retry-on, x-envoy-retry-grpc-on).
type RetryOn uint32

// The retry conditions, one bit each.
const (
	RetryOn5xx RetryOn = 1 << iota
	RetryOnGatewayError
	RetryOnConnectFailure
	RetryOnEnvoyRateLimited
	RetryOnRetriable4xx
	RetryOnRefusedStream
	RetryOnRetriableStatusCodes
	RetryOnRetriableHeaders
	RetryOnReset
	RetryOnResetBeforeRequest
	// RetryOnHTTP3PostConnectFailure is accepted; Outrigger has no
	// HTTP/3 upstreams, so it never applies.
	RetryOnHTTP3PostConnectFailure
	RetryOnGrpcCancelled
	RetryOnGrpcDeadlineExceeded
	RetryOnGrpcResourceExhausted
	RetryOnGrpcUnavailable
	RetryOnGrpcInternal
)

// RetryOnGrpc are the conditions read from a response's grpc-status.
const RetryOnGrpc = RetryOnGrpcCancelled | RetryOnGrpcDeadlineExceeded | RetryOnGrpcResourceExhausted |
	RetryOnGrpcUnavailable | RetryOnGrpcInternal

// httpRetryOn and grpcRetryOn are the condition names of x-envoy-retry-on
// and x-envoy-retry-grpc-on; retry_on takes both.
var (
	httpRetryOn = map[string]RetryOn{
		"5xx": RetryOn5xx, "gateway-error": RetryOnGatewayError, "connect-failure": RetryOnConnectFailure,
		"envoy-ratelimited": RetryOnEnvoyRateLimited, "retriable-4xx": RetryOnRetriable4xx,
		"refused-stream": RetryOnRefusedStream, "retriable-status-codes": RetryOnRetriableStatusCodes,
		"retriable-headers": RetryOnRetriableHeaders, "reset": RetryOnReset,
		"reset-before-request": RetryOnResetBeforeRequest, "http3-post-connect-failure": RetryOnHTTP3PostConnectFailure,
	}
	grpcRetryOn = map[string]RetryOn{
		"cancelled": RetryOnGrpcCancelled, "deadline-exceeded": RetryOnGrpcDeadlineExceeded,
		"resource-exhausted": RetryOnGrpcResourceExhausted, "unavailable": RetryOnGrpcUnavailable,
		"internal": RetryOnGrpcInternal,
	}
)

// ParseRetryOn reads a comma-separated list of HTTP retry conditions, as
// x-envoy-retry-on carries them; ok is false when a name is unknown (the
// known ones still count, as in Envoy).
func ParseRetryOn(s string) (on RetryOn, ok bool) { return parseConditions(s, httpRetryOn, nil) }

// ParseRetryGrpcOn reads x-envoy-retry-grpc-on's list of gRPC conditions.
func ParseRetryGrpcOn(s string) (on RetryOn, ok bool) { return parseConditions(s, grpcRetryOn, nil) }

// parseConditions reads a comma-separated list of names from a, then b
// (nil: none), blanks around names ignored.
func parseConditions(s string, a, b map[string]RetryOn) (on RetryOn, ok bool) {
	ok = true
	for s != "" {
		name, rest, _ := strings.Cut(s, ",")
		s = rest
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if bit, found := a[name]; found {
			on |= bit
		} else if bit, found := b[name]; found {
			on |= bit
		} else {
			ok = false
		}
	}
	return on, ok
}

// Envoy's back-off defaults: a 25 ms base interval, capped at ten times
// the base; a rate-limited back-off is capped at 300 s.
const (
	DefaultRetryBaseInterval  = 25 * time.Millisecond
	DefaultRateLimitedMaximum = 300 * time.Second
)

// ResetHeader is one of rate_limited_retry_back_off's reset_headers: the
// response header that tells when to retry, in seconds or as a Unix
// timestamp.
type ResetHeader struct {
	Name          string
	UnixTimestamp bool
}

// RetryPolicy is a compiled retry_policy of a route or virtual host.
type RetryPolicy struct {
	RetryOn    RetryOn
	NumRetries uint32
	// PerTryTimeout and PerTryIdleTimeout bound each attempt; 0 is none.
	PerTryTimeout     time.Duration
	PerTryIdleTimeout time.Duration
	// BaseInterval and MaxInterval are the exponential back-off's;
	// BackOffSet tells whether retry_back_off set them (otherwise the
	// runtime's upstream.base_retry_backoff_ms may replace the default).
	BaseInterval, MaxInterval time.Duration
	BackOffSet                bool
	// ResetHeaders and ResetMaxInterval are rate_limited_retry_back_off's.
	ResetHeaders     []ResetHeader
	ResetMaxInterval time.Duration
	// RetriableStatusCodes are retriable_status_codes.
	RetriableStatusCodes []uint32
	// RetriableHeaders match response headers (retriable_headers), any
	// one making a response retriable; RetriableRequestHeaders, when
	// set, limit retries to requests one of them matches.
	RetriableHeaders        []HeaderMatch
	RetriableRequestHeaders []HeaderMatch
	// The retry host predicates, which make the load balancer pick
	// again, up to HostSelectionMaxAttempts times: PreviousHosts
	// (previous_hosts) avoids the hosts tried before, OmitCanary
	// (omit_canary_hosts) canary hosts, OmitMetadata (omit_host_metadata,
	// nil without it) hosts whose envoy.lb metadata has its fields.
	PreviousHosts            bool
	OmitCanary               bool
	OmitMetadata             *structpb.Struct
	HostSelectionMaxAttempts int64
	// PriorityUpdateFrequency is retry_priority previous_priorities'
	// update_frequency: after every that many attempted hosts, the
	// priority levels those hosts belong to are left out of the next
	// picks' priority load. 0 when the policy has no retry_priority.
	PriorityUpdateFrequency int
}

// previousPriorities is the retry priority Outrigger has, by extension
// name and by the type of its typed_config.
const previousPriorities = "envoy.retry_priorities.previous_priorities"

// The retry host predicates, by extension name (the proxy. spelling is
// accepted too) and by the type of their typed_config.
var hostPredicates = map[string]protoreflect.FullName{
	"envoy.retry_host_predicates.previous_hosts":     (&previoushostsv3.PreviousHostsPredicate{}).ProtoReflect().Descriptor().FullName(),
	"envoy.retry_host_predicates.omit_canary_hosts":  (&omitcanaryv3.OmitCanaryHostsPredicate{}).ProtoReflect().Descriptor().FullName(),
	"envoy.retry_host_predicates.omit_host_metadata": (&omitmetadatav3.OmitHostMetadataConfig{}).ProtoReflect().Descriptor().FullName(),
}

// compileRetryPolicy compiles a retry_policy; errors name the field
// below it. A nil p compiles to nil.
func compileRetryPolicy(p *routev3.RetryPolicy) (*RetryPolicy, error) {
	if p == nil {
		return nil, nil
	}
	rp := &RetryPolicy{NumRetries: 1, BaseInterval: DefaultRetryBaseInterval, ResetMaxInterval: DefaultRateLimitedMaximum}
	on, ok := parseConditions(p.GetRetryOn(), httpRetryOn, grpcRetryOn)
	if !ok {
		return nil, fmt.Errorf("retry_on: %q names a condition Envoy does not have", p.GetRetryOn())
	}
	rp.RetryOn = on
	if n := p.GetNumRetries(); n != nil {
		rp.NumRetries = n.GetValue()
	}
	var err error
	if t := p.GetPerTryTimeout(); t != nil {
		if rp.PerTryTimeout, err = duration(t); err != nil {
			return nil, fmt.Errorf("per_try_timeout: %w", err)
		}
	}
	if t := p.GetPerTryIdleTimeout(); t != nil {
		if rp.PerTryIdleTimeout, err = duration(t); err != nil {
			return nil, fmt.Errorf("per_try_idle_timeout: %w", err)
		}
	}
	if b := p.GetRetryBackOff(); b != nil {
		rp.BackOffSet = true
		if rp.BaseInterval, err = duration(b.GetBaseInterval()); err != nil || rp.BaseInterval <= 0 {
			return nil, errors.New("retry_back_off.base_interval: must be above 0")
		}
		if m := b.GetMaxInterval(); m != nil {
			if rp.MaxInterval, err = duration(m); err != nil {
				return nil, fmt.Errorf("retry_back_off.max_interval: %w", err)
			}
			if rp.MaxInterval < rp.BaseInterval {
				return nil, errors.New("retry_back_off.max_interval: must be at least base_interval")
			}
		}
	}
	if rp.MaxInterval == 0 {
		rp.MaxInterval = 10 * rp.BaseInterval
	}
	if rl := p.GetRateLimitedRetryBackOff(); rl != nil {
		for i, h := range rl.GetResetHeaders() {
			rp.ResetHeaders = append(rp.ResetHeaders, ResetHeader{
				Name:          strings.ToLower(h.GetName()),
				UnixTimestamp: h.GetFormat() == routev3.RetryPolicy_UNIX_TIMESTAMP,
			})
			if h.GetName() == "" {
				return nil, fmt.Errorf("rate_limited_retry_back_off.reset_headers[%d].name: a header name is required", i)
			}
		}
		if m := rl.GetMaxInterval(); m != nil {
			if rp.ResetMaxInterval, err = duration(m); err != nil {
				return nil, fmt.Errorf("rate_limited_retry_back_off.max_interval: %w", err)
			}
		}
	}
	rp.RetriableStatusCodes = p.GetRetriableStatusCodes()
	for i, h := range p.GetRetriableHeaders() {
		m, err := CompileHeader(h)
		if err != nil {
			return nil, fmt.Errorf("retriable_headers[%d].%w", i, err)
		}
		rp.RetriableHeaders = append(rp.RetriableHeaders, m)
	}
	for i, h := range p.GetRetriableRequestHeaders() {
		m, err := CompileHeader(h)
		if err != nil {
			return nil, fmt.Errorf("retriable_request_headers[%d].%w", i, err)
		}
		rp.RetriableRequestHeaders = append(rp.RetriableRequestHeaders, m)
	}
	for i, hp := range p.GetRetryHostPredicate() {
		if err := compileHostPredicate(rp, hp); err != nil {
			return nil, fmt.Errorf("retry_host_predicate[%d]%w", i, err)
		}
	}
	rp.HostSelectionMaxAttempts = p.GetHostSelectionRetryMaxAttempts()
	if pr := p.GetRetryPriority(); pr != nil {
		f, err := compileRetryPriority(pr)
		if err != nil {
			return nil, fmt.Errorf("retry_priority%w", err)
		}
		rp.PriorityUpdateFrequency = f
	}
	return rp, nil
}

// compileRetryPriority reads a retry_priority, which must be
// previous_priorities, and returns its update_frequency. Errors name the
// field below retry_priority (starting with its separator).
func compileRetryPriority(pr *routev3.RetryPolicy_RetryPriority) (int, error) {
	var cfg previousprioritiesv3.PreviousPrioritiesConfig
	tc := pr.GetTypedConfig()
	typed := tc != nil && tc.GetTypeUrl() != ""
	name := strings.Replace(pr.GetName(), "proxy.", "envoy.", 1)
	switch {
	case typed && tc.MessageIs(&cfg):
		if err := tc.UnmarshalTo(&cfg); err != nil {
			return 0, fmt.Errorf(".typed_config: %w", err)
		}
	case typed:
		return 0, fmt.Errorf(".typed_config: %s is not supported by Outrigger (supported: %s)", tc.GetTypeUrl(), previousPriorities)
	case name == previousPriorities:
		// Envoy requires the config: update_frequency must be above 0.
		return 0, errors.New(".typed_config: previous_priorities needs its config (update_frequency above 0)")
	default:
		return 0, fmt.Errorf(".name: %q is not supported by Outrigger (supported: %s)", pr.GetName(), previousPriorities)
	}
	if cfg.GetUpdateFrequency() <= 0 {
		return 0, errors.New(".typed_config.update_frequency: must be above 0")
	}
	return int(cfg.GetUpdateFrequency()), nil
}

// compileHostPredicate adds a retry host predicate to rp, found by its
// typed_config's type, else by its name. Errors name the field below
// the predicate (starting with its separator).
func compileHostPredicate(rp *RetryPolicy, hp *routev3.RetryPolicy_RetryHostPredicate) error {
	var kind protoreflect.FullName
	if tc := hp.GetTypedConfig(); tc != nil && tc.GetTypeUrl() != "" {
		kind = protoreflect.FullName(tc.GetTypeUrl()[strings.LastIndexByte(tc.GetTypeUrl(), '/')+1:])
	} else {
		kind = hostPredicates[strings.Replace(hp.GetName(), "proxy.", "envoy.", 1)]
	}
	switch kind {
	case hostPredicates["envoy.retry_host_predicates.previous_hosts"]:
		rp.PreviousHosts = true
	case hostPredicates["envoy.retry_host_predicates.omit_canary_hosts"]:
		rp.OmitCanary = true
	case hostPredicates["envoy.retry_host_predicates.omit_host_metadata"]:
		var cfg omitmetadatav3.OmitHostMetadataConfig
		if tc := hp.GetTypedConfig(); tc != nil {
			if err := tc.UnmarshalTo(&cfg); err != nil {
				return fmt.Errorf(".typed_config: %w", err)
			}
		}
		lb := cfg.GetMetadataMatch().GetFilterMetadata()["envoy.lb"]
		if len(lb.GetFields()) > 0 {
			rp.OmitMetadata = proto.Clone(lb).(*structpb.Struct)
		}
	default:
		return fmt.Errorf(": %q is not supported by Outrigger (supported: envoy.retry_host_predicates.previous_hosts, omit_canary_hosts, omit_host_metadata)", hp.GetName())
	}
	return nil
}

// Retriable reports whether the policy may retry req at all: a policy
// with retriable_request_headers retries only the requests one of them
// matches.
func (p *RetryPolicy) Retriable(req *Request) bool {
	if len(p.RetriableRequestHeaders) == 0 {
		return true
	}
	for i := range p.RetriableRequestHeaders {
		if p.RetriableRequestHeaders[i].Matches(req) {
			return true
		}
	}
	return false
}

// MatchesResponse reports whether one of the retriable_headers matches a
// response whose headers h reads (":status" included).
func (p *RetryPolicy) MatchesResponse(h HeaderGetter) bool {
	req := Request{Headers: h}
	for i := range p.RetriableHeaders {
		if p.RetriableHeaders[i].Matches(&req) {
			return true
		}
	}
	return false
}
