package xds

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Envoy's reconnection backoff for xDS streams: jittered exponential from
// 500 ms up to 30 s.
const (
	adsBackoffBase = 500 * time.Millisecond
	adsBackoffMax  = 30 * time.Second
)

// maxResponseBytes bounds one discovery response. Envoy sets no limit of
// its own; gRPC's default (4 MiB) is too small for the listener sets of
// large meshes, so the bound is high, but there is one.
const maxResponseBytes = 128 << 20

// DefaultInitialFetchTimeout is Envoy's initial_fetch_timeout when a
// config source leaves it unset.
const DefaultInitialFetchTimeout = 15 * time.Second

// ADSOptions configure an ADS client.
type ADSOptions struct {
	// Conn is the channel to the management server (required).
	Conn grpc.ClientConnInterface
	// CallContext prepares each stream's context (initial metadata); nil
	// uses the parent context as is.
	CallContext func(context.Context) (context.Context, context.CancelFunc)
	// Node identifies this proxy in the requests (required).
	Node *corev3.Node
	// NodeOnFirstMessageOnly sends the node in the first request of each
	// stream only (set_node_on_first_message_only).
	NodeOnFirstMessageOnly bool
	// Stats is the root scope: control_plane.* is created in it.
	Stats *stats.Store
	// Log receives stream and update warnings.
	Log logr.Logger
	// Unknown is the unknown-field policy; the zero value warns.
	Unknown UnknownPolicy
	// UnknownCounter counts the distinct unknown fields warned about.
	UnknownCounter *stats.Counter
	// Now is the clock of the update stats; nil means time.Now.
	Now func() time.Time
	// BackoffBase and BackoffMax override Envoy's reconnection backoff
	// (tests); zero keeps Envoy's.
	BackoffBase, BackoffMax time.Duration
}

// ADS is a state-of-the-world Aggregated Discovery Service client, like
// Envoy's GrpcMuxImpl: one bidirectional stream to the management server
// carries every subscription, each response is ACKed (its version_info
// and nonce echoed) or NACKed (the previous version_info, the nonce and an
// error_detail), and a lost stream is opened again after a jittered
// exponential backoff, the last accepted configuration serving meanwhile.
// Subscriptions are added before Start; all of them are wildcard (they
// want every resource of their type, as LDS and CDS do).
type ADS struct {
	opts   ADSOptions
	client discoveryv3.AggregatedDiscoveryServiceClient
	subs   []*ADSSubscription

	connected         *stats.Gauge
	pendingRequests   *stats.Gauge
	rateLimitEnforced *stats.Counter
	// identifier is the management server's control_plane.identifier, as
	// its last response gave it.
	identifier *stats.TextReadout

	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	started bool
	mu      sync.Mutex
}

// NewADS prepares an ADS client; nothing is sent before Start.
func NewADS(o ADSOptions) (*ADS, error) {
	switch {
	case o.Conn == nil:
		return nil, errors.New("a gRPC channel is required")
	case o.Node == nil:
		return nil, errors.New("a node is required")
	case o.Stats == nil:
		return nil, errors.New("a stats store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = adsBackoffBase
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = adsBackoffMax
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ADS{
		opts:              o,
		client:            discoveryv3.NewAggregatedDiscoveryServiceClient(o.Conn),
		connected:         o.Stats.Gauge("control_plane.connected_state"),
		pendingRequests:   o.Stats.Gauge("control_plane.pending_requests"),
		rateLimitEnforced: o.Stats.Counter("control_plane.rate_limit_enforced"),
		identifier:        o.Stats.TextReadout("control_plane.identifier"),
		ctx:               ctx,
		cancel:            cancel,
		done:              make(chan struct{}),
	}, nil
}

// SubscriptionOptions configure one resource type on an ADS stream.
type SubscriptionOptions struct {
	// TypeURL is the resources' type (required), e.g. ListenerTypeURL.
	TypeURL string
	// Stats is the scope of the subscription stats (required).
	Stats stats.Scope
	// InitialFetchTimeout bounds the wait for the first response before
	// Ready is closed anyway (counted in init_fetch_timeout); 0 waits
	// forever.
	InitialFetchTimeout time.Duration
}

// ADSSubscription is one resource type on an ADS stream.
type ADSSubscription struct {
	typeURL string
	dec     decoder
	apply   func(Update) error
	stats   subscriptionStats
	empty   *stats.Counter
	timeout time.Duration

	ready     chan struct{}
	readyOnce sync.Once
	// warned holds the unknown-field paths already warned about, and
	// lastRejected the last rejection logged; only the stream goroutine
	// touches them.
	warned       map[string]bool
	lastRejected string

	mu          sync.Mutex
	version     string
	lastUpdated time.Time
}

// Subscribe adds a wildcard subscription to o.TypeURL. apply is called
// with each response's resources, never concurrently with itself; an error
// it returns NACKs the response (counted in update_rejected).
func (a *ADS) Subscribe(o SubscriptionOptions, apply func(Update) error) (*ADSSubscription, error) {
	switch {
	case o.TypeURL == "":
		return nil, errors.New("a resource type URL is required")
	case o.Stats == (stats.Scope{}):
		return nil, errors.New("a stats scope is required")
	case apply == nil:
		return nil, errors.New("an apply function is required")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return nil, errors.New("the ADS stream is already started")
	}
	resourceType, err := protoregistry.GlobalTypes.FindMessageByURL(o.TypeURL)
	if err != nil {
		return nil, fmt.Errorf("resource type %q is not linked in: %w", o.TypeURL, err)
	}
	types, err := newDiscoveryTypes()
	if err != nil {
		return nil, err
	}
	sub := &ADSSubscription{
		typeURL: o.TypeURL,
		dec:     decoder{types: types, typeURL: o.TypeURL, resourceType: resourceType},
		apply:   apply,
		stats:   newSubscriptionStats(o.Stats),
		empty:   o.Stats.Counter("update_empty"),
		timeout: o.InitialFetchTimeout,
		ready:   make(chan struct{}),
		warned:  map[string]bool{},
	}
	a.subs = append(a.subs, sub)
	return sub, nil
}

// Ready is closed once the first response was handled (accepted or not),
// or the initial fetch timed out: what Envoy's init target for the
// subscription waits for.
func (s *ADSSubscription) Ready() <-chan struct{} { return s.ready }

func (s *ADSSubscription) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// Version returns the version_info of the last accepted response, or "".
func (s *ADSSubscription) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// LastUpdated returns when the last response was accepted, or the zero
// time.
func (s *ADSSubscription) LastUpdated() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUpdated
}

// Start opens the stream in a goroutine and arms the initial fetch
// timeouts. It never blocks on the management server.
func (a *ADS) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return errors.New("the ADS stream is already started")
	}
	if a.ctx.Err() != nil {
		return errors.New("the ADS client is closed")
	}
	a.started = true
	for _, sub := range a.subs {
		// Envoy counts the subscription's start as an attempt.
		sub.stats.updateAttempt.Inc()
		if sub.timeout > 0 {
			t := time.AfterFunc(sub.timeout, func() {
				select {
				case <-sub.ready:
				default:
					sub.stats.initFetchTimeout.Inc()
					sub.stats.updateAttempt.Inc()
					logging.Warning(a.opts.Log, "ads: initial fetch timed out", "type_url", sub.typeURL, "timeout", sub.timeout.String())
					sub.markReady()
				}
			})
			context.AfterFunc(a.ctx, func() { t.Stop() })
		}
	}
	go a.run()
	return nil
}

// Close ends the stream and waits for its goroutine, so no apply runs once
// it returns. It is idempotent and safe before Start.
func (a *ADS) Close() error {
	a.cancel()
	a.mu.Lock()
	started := a.started
	a.started = true // no Start after Close
	a.mu.Unlock()
	if started {
		<-a.done
	}
	return nil
}

// run keeps a stream open until Close, reconnecting with backoff.
func (a *ADS) run() {
	defer close(a.done)
	attempt := 0
	for {
		if a.stream() {
			attempt = 0 // the stream got a response: start the backoff over
		}
		a.connected.Set(0)
		if a.ctx.Err() != nil {
			return
		}
		// Envoy's ConnectionFailure: every subscription counts it; it
		// does not end the wait for a first response.
		for _, sub := range a.subs {
			sub.stats.updateFailure.Inc()
			sub.stats.updateAttempt.Inc()
		}
		attempt++
		delay := a.backoff(attempt)
		a.opts.Log.V(1).Info("ads: stream lost; reconnecting", "in", delay.String())
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// backoff is Envoy's JitteredExponentialBackOffStrategy: a random delay
// below base*2^(attempt-1), capped at max.
func (a *ADS) backoff(attempt int) time.Duration {
	ceiling := a.opts.BackoffMax
	if attempt < 30 {
		ceiling = min(a.opts.BackoffBase<<(attempt-1), a.opts.BackoffMax)
	}
	return time.Duration(rand.Int64N(int64(ceiling)) + 1)
}

// stream runs one stream: it sends the subscriptions' requests, then
// handles responses until the stream ends. It reports whether a response
// arrived.
func (a *ADS) stream() (gotResponse bool) {
	// The stream's own context: cancelling it when the stream is left,
	// however it is left, releases the stream.
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	if a.opts.CallContext != nil {
		var cancelCall context.CancelFunc
		ctx, cancelCall = a.opts.CallContext(ctx)
		defer cancelCall()
	}
	st, err := a.client.StreamAggregatedResources(ctx, grpc.MaxCallRecvMsgSize(maxResponseBytes))
	if err != nil {
		a.warn("ads: cannot open the stream", err)
		return false
	}
	a.connected.Set(1)
	first := true
	send := func(req *discoveryv3.DiscoveryRequest) error {
		if first || !a.opts.NodeOnFirstMessageOnly {
			req.Node = a.opts.Node
		}
		first = false
		return st.Send(req)
	}
	byType := map[string]*ADSSubscription{}
	for _, sub := range a.subs {
		byType[sub.typeURL] = sub
		// The version last accepted tells a restarted management server
		// what this proxy has; the nonce is empty on a new stream.
		if err := send(&discoveryv3.DiscoveryRequest{TypeUrl: sub.typeURL, VersionInfo: sub.Version()}); err != nil {
			a.warn("ads: send failed", err)
			return false
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			if a.ctx.Err() == nil {
				a.warn("ads: stream closed", err)
			}
			return gotResponse
		}
		gotResponse = true
		if cp := resp.GetControlPlane(); cp != nil {
			a.identifier.Set(cp.GetIdentifier())
		}
		sub := byType[resp.GetTypeUrl()]
		if sub == nil {
			a.opts.Log.Info("ads: ignoring a response for a type URL with no subscription", "type_url", resp.GetTypeUrl())
			continue
		}
		req := a.handle(sub, resp)
		if a.ctx.Err() != nil {
			return gotResponse
		}
		if err := send(req); err != nil {
			a.warn("ads: send failed", err)
			return gotResponse
		}
	}
}

// handle applies one response and returns the ACK or NACK to send.
func (a *ADS) handle(sub *ADSSubscription, resp *discoveryv3.DiscoveryResponse) *discoveryv3.DiscoveryRequest {
	defer sub.markReady()
	start := a.opts.Now()
	sub.stats.updateAttempt.Inc()
	err := a.decodeAndApply(sub, resp)
	if err != nil {
		sub.stats.updateRejected.Inc()
		// A management server may send the rejected version again at
		// once, and again: the same rejection is logged once.
		if msg := resp.GetVersionInfo() + "\x00" + err.Error(); msg != sub.lastRejected {
			sub.lastRejected = msg
			logging.Warning(a.opts.Log, "ads: update rejected", "type_url", sub.typeURL, "version", resp.GetVersionInfo(), "error", oneLine(err))
		}
		return &discoveryv3.DiscoveryRequest{
			TypeUrl:       sub.typeURL,
			VersionInfo:   sub.Version(),
			ResponseNonce: resp.GetNonce(),
			ErrorDetail:   nackStatus(err),
		}
	}
	now := a.opts.Now()
	if len(resp.GetResources()) == 0 {
		sub.empty.Inc()
	}
	sub.stats.success(resp.GetVersionInfo(), start, now)
	sub.mu.Lock()
	sub.version, sub.lastUpdated = resp.GetVersionInfo(), now
	sub.mu.Unlock()
	return &discoveryv3.DiscoveryRequest{
		TypeUrl:       sub.typeURL,
		VersionInfo:   resp.GetVersionInfo(),
		ResponseNonce: resp.GetNonce(),
	}
}

// decodeAndApply checks a response as a resource file is checked (the
// same decoder, on its wire form: resource types, unknown fields under
// the policy) and applies it.
func (a *ADS) decodeAndApply(sub *ADSSubscription, resp *discoveryv3.DiscoveryResponse) error {
	data, err := marshalResponse(resp)
	if err != nil {
		return err
	}
	u, unknown, err := sub.dec.decodeBytes("response.pb", data, a.opts.Unknown != UnknownReject)
	if err != nil {
		return err
	}
	if a.opts.Unknown == UnknownWarn {
		for _, p := range unknown {
			if sub.warned[p] {
				continue
			}
			sub.warned[p] = true
			logging.Warning(a.opts.Log, "unknown field in dynamic configuration was ignored", "type_url", sub.typeURL, "field", p)
			if a.opts.UnknownCounter != nil {
				a.opts.UnknownCounter.Inc()
			}
		}
	}
	return sub.apply(u)
}

// warn logs a stream problem at warning level.
func (a *ADS) warn(msg string, err error) {
	logging.Warning(a.opts.Log, msg, "error", err.Error())
}

// maxNackMessage bounds error_detail.message, as Envoy truncates it to
// stay within gRPC's limits on status messages.
const maxNackMessage = 4096

// nackStatus is a NACK's error_detail: Envoy sends code INTERNAL with the
// problem (here every problem, each with its field path).
func nackStatus(err error) *status.Status {
	msg := oneLine(err)
	if len(msg) > maxNackMessage {
		msg = msg[:maxNackMessage]
	}
	return &status.Status{Code: int32(codes.Internal), Message: msg}
}

// marshalResponse is a response's wire form, for the decoder.
func marshalResponse(resp *discoveryv3.DiscoveryResponse) ([]byte, error) {
	data, err := proto.Marshal(resp)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errors.New("the response is empty")
	}
	return data, nil
}
