package xds

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"

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
	// HostRoot is the directory standing for "/" where the collector's
	// hold during large responses reads the cgroup's memory limit (see
	// holdGC); "" means "/".
	HostRoot string
	// Delta speaks the incremental protocol (api_type DELTA_GRPC) rather
	// than the state of the world.
	Delta bool
	// BackoffBase and BackoffMax override Envoy's reconnection backoff
	// (tests); zero keeps Envoy's.
	BackoffBase, BackoffMax time.Duration
	// TypeURL, when set, makes the stream a resource type's own discovery
	// service (a config source's api_config_source, e.g. CDS's
	// StreamClusters) rather than the aggregated one; only a subscription
	// of that type can be added.
	TypeURL string
	// RateLimit, when set, bounds the requests sent (rate_limit_settings).
	RateLimit *RateLimit
	// REST, when set, polls TypeURL's REST endpoint (api_type REST)
	// instead of opening a gRPC stream; Conn is then unused.
	REST *RESTOptions
}

// ADS is a state-of-the-world Aggregated Discovery Service client, like
// Envoy's GrpcMuxImpl: one bidirectional stream to the management server
// carries every subscription, each response is ACKed (its version_info
// and nonce echoed) or NACKed (the previous version_info, the nonce and an
// error_detail), and a lost stream is opened again after a jittered
// exponential backoff, the last accepted configuration serving meanwhile.
// There is one subscription per resource type; each wants every resource
// of its type (a wildcard, as LDS and CDS) or named ones (as EDS and RDS),
// and can be added or change its interest while the stream runs. With
// ADSOptions.REST the client polls one type's REST endpoint instead (see
// poll): the same subscriptions, decoding and stats, without a stream.
type ADS struct {
	opts ADSOptions
	// sotwMethod and deltaMethod are the stream's gRPC methods, restPath
	// the path polled over REST.
	sotwMethod, deltaMethod, restPath string
	// limiter is the token bucket of rate_limit_settings, nil without.
	limiter *rate.Limiter

	connected         *stats.Gauge
	pendingRequests   *stats.Gauge
	rateLimitEnforced *stats.Counter
	// identifier is the management server's control_plane.identifier, as
	// its last response gave it.
	identifier *stats.TextReadout

	// wake tells the stream that subscriptions or their interests
	// changed (a buffer of one: changes are read from the subscriptions).
	wake chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	subs    []*ADSSubscription
	started bool
}

// NewADS prepares an ADS client; nothing is sent before Start.
func NewADS(o ADSOptions) (*ADS, error) {
	switch {
	case o.Conn == nil && o.REST == nil:
		return nil, errors.New("a gRPC channel is required")
	case o.REST != nil && o.TypeURL == "":
		return nil, errors.New("REST polls one resource type's service: a type URL is required")
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
	sotw, delta, rest := adsSotwMethod, adsDeltaMethod, ""
	if o.TypeURL != "" {
		m, ok := serviceMethods[o.TypeURL]
		if !ok {
			return nil, fmt.Errorf("no discovery service for %s", o.TypeURL)
		}
		sotw, delta, rest = m.sotw, m.delta, m.rest
	}
	if err := o.REST.check(); err != nil {
		return nil, err
	}
	limiter, err := o.RateLimit.limiter()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ADS{
		opts:              o,
		sotwMethod:        sotw,
		deltaMethod:       delta,
		restPath:          rest,
		limiter:           limiter,
		connected:         o.Stats.Gauge("control_plane.connected_state"),
		pendingRequests:   o.Stats.Gauge("control_plane.pending_requests"),
		rateLimitEnforced: o.Stats.Counter("control_plane.rate_limit_enforced"),
		identifier:        o.Stats.TextReadout("control_plane.identifier"),
		wake:              make(chan struct{}, 1),
		ctx:               ctx,
		cancel:            cancel,
		done:              make(chan struct{}),
	}, nil
}

// Start opens the stream in a goroutine and starts the subscriptions
// added so far. It never blocks on the management server.
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
		a.startSubscription(sub)
	}
	if a.opts.REST != nil {
		go a.poll()
	} else {
		go a.run()
	}
	return nil
}

// Close ends the stream and waits for its goroutine, so no apply runs once
// it returns. It is idempotent and safe before Start.
func (a *ADS) Close() error {
	a.mu.Lock()
	a.cancel()
	started := a.started
	a.started = true // no Start after Close
	a.mu.Unlock()
	if started {
		<-a.done
	}
	if a.opts.REST != nil {
		a.opts.REST.client.CloseIdleConnections()
	}
	return nil
}

// poke tells the stream that subscriptions or their interests changed.
func (a *ADS) poke() {
	select {
	case a.wake <- struct{}{}:
	default: // one is pending already
	}
}

// subscriptions returns the subscriptions added so far.
func (a *ADS) subscriptions() []*ADSSubscription {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.subs)
}

// run keeps a stream open until Close, reconnecting with backoff.
func (a *ADS) run() {
	defer close(a.done)
	attempt := 0
	for {
		if a.openStream() {
			attempt = 0 // the stream got a response: start the backoff over
		}
		a.connected.Set(0)
		if a.ctx.Err() != nil {
			return
		}
		for _, sub := range a.subscriptions() {
			a.connectionFailure(sub)
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

// connectionFailure counts Envoy's ConnectionFailure for sub (a lost
// stream, a failed poll), with its attempt; it does not end the wait for
// a first response.
func (a *ADS) connectionFailure(sub *ADSSubscription) {
	sub.stats.updateFailure.Inc()
	a.streamAttempt(sub)
	if sub.onFailure != nil {
		sub.onFailure()
	}
}

// streamAttempt counts an update_attempt of a gRPC subscription, which
// Envoy counts at its start, per response, per lost stream and at the
// initial fetch timeout. A REST subscription counts one per request
// instead (Envoy's HttpSubscriptionImpl::createRequest), in poll.
func (a *ADS) streamAttempt(sub *ADSSubscription) {
	if a.opts.REST == nil {
		sub.stats.updateAttempt.Inc()
	}
}

// Delta reports whether the stream speaks the incremental protocol.
func (a *ADS) Delta() bool { return a.opts.Delta }

// openStream runs one stream of the configured protocol and reports
// whether a response arrived on it.
func (a *ADS) openStream() bool {
	if a.opts.Delta {
		return a.deltaStream()
	}
	return a.stream()
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

// adsStream is the state of one stream: what was sent on it. Only the
// stream goroutine uses it.
type adsStream struct {
	st    discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	first bool
	// sent is, by subscription, the interest count its last request on
	// this stream carried; a subscription missing from it has not been
	// requested on this stream yet.
	sent map[*ADSSubscription]uint64
	// nonces are the last response nonces, by type URL.
	nonces map[string]string
}

// stream runs one state-of-the-world stream (see pump). It reports
// whether a response arrived.
func (a *ADS) stream() (gotResponse bool) {
	ctx, cancel := a.streamContext()
	defer cancel()
	st, err := openStream[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse](ctx, a.opts.Conn, a.sotwMethod)
	if err != nil {
		a.warn("ads: cannot open the stream", err)
		return false
	}
	s := &adsStream{st: st, first: true, sent: map[*ADSSubscription]uint64{}, nonces: map[string]string{}}
	return pump(a, ctx, st.Recv,
		func() error { return a.requestChanged(s) },
		func(resp *discoveryv3.DiscoveryResponse) error { return a.respond(s, resp) })
}

// streamContext is the context of one stream: cancelling it when the
// stream is left, however it is left, releases the stream and its
// receiver. It carries the call's metadata.
func (a *ADS) streamContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a.ctx)
	if a.opts.CallContext == nil {
		return ctx, cancel
	}
	ctx, cancelCall := a.opts.CallContext(ctx)
	return ctx, func() { cancelCall(); cancel() }
}

// received is one Recv of a stream.
type received[R any] struct {
	resp R
	err  error
}

// pump runs an opened stream (of either protocol) on the single goroutine
// that sends on it and handles its responses, while another goroutine
// only receives: it requests every subscription, then answers each
// response (respond sends the ACK or NACK), and requests again whenever a
// subscription is added or its interest changes. It reports whether a
// response arrived.
func pump[R any](a *ADS, ctx context.Context, recvFn func() (R, error), request func() error, respond func(R) error) (gotResponse bool) {
	a.connected.Set(1)
	recv := make(chan received[R])
	go func() {
		for {
			resp, err := recvFn()
			select {
			case recv <- received[R]{resp, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	if err := request(); err != nil {
		a.warn("ads: send failed", err)
		return false
	}
	for {
		select {
		case <-ctx.Done():
			return gotResponse
		case <-a.wake:
			if err := request(); err != nil {
				a.warn("ads: send failed", err)
				return gotResponse
			}
		case r := <-recv:
			if r.err != nil {
				if a.ctx.Err() == nil {
					a.warn("ads: stream closed", r.err)
				}
				return gotResponse
			}
			gotResponse = true
			if err := respond(r.resp); err != nil {
				a.warn("ads: send failed", err)
				return gotResponse
			}
		}
	}
}

// send sends a request of sub on the stream, with the subscription's
// current resource names, the node when it has to be there, and the
// type's last nonce unless the request has its own.
func (a *ADS) send(s *adsStream, sub *ADSSubscription, req *discoveryv3.DiscoveryRequest) error {
	names, interest := sub.wanted()
	req.TypeUrl, req.ResourceNames = sub.typeURL, names
	if s.first || !a.opts.NodeOnFirstMessageOnly {
		req.Node = a.opts.Node
	}
	s.first = false
	s.sent[sub] = interest
	if err := a.takeToken(s.st.Context()); err != nil {
		return err
	}
	return s.st.Send(req)
}

// requestChanged requests the subscriptions not yet requested on the
// stream, or whose interest changed since. The version is the last
// accepted: it tells a restarted management server what this proxy has.
func (a *ADS) requestChanged(s *adsStream) error {
	for _, sub := range a.subscriptions() {
		_, interest := sub.wanted()
		if sent, ok := s.sent[sub]; ok && sent == interest {
			continue
		}
		req := &discoveryv3.DiscoveryRequest{VersionInfo: sub.Version(), ResponseNonce: s.nonces[sub.typeURL]}
		if err := a.send(s, sub, req); err != nil {
			return err
		}
	}
	return nil
}

// respond handles one response and sends its ACK or NACK.
func (a *ADS) respond(s *adsStream, resp *discoveryv3.DiscoveryResponse) error {
	sub := a.subscriptionFor(resp.GetTypeUrl(), resp.GetControlPlane())
	if sub == nil {
		return nil
	}
	s.nonces[sub.typeURL] = resp.GetNonce()
	req := a.handle(sub, resp)
	if a.ctx.Err() != nil {
		return nil
	}
	return a.send(s, sub, req)
}

// subscriptionFor notes the management server's identifier, as a
// response gives it, and returns the subscription of typeURL; a response
// of a type nothing subscribed to is logged and ignored (nil).
func (a *ADS) subscriptionFor(typeURL string, cp *corev3.ControlPlane) *ADSSubscription {
	if cp != nil {
		a.identifier.Set(cp.GetIdentifier())
	}
	for _, candidate := range a.subscriptions() {
		if candidate.typeURL == typeURL {
			return candidate
		}
	}
	a.opts.Log.Info("ads: ignoring a response for a type URL with no subscription", "type_url", typeURL)
	return nil
}

// warn logs a stream problem at warning level.
func (a *ADS) warn(msg string, err error) {
	logging.Warning(a.opts.Log, msg, "error", err.Error())
}
