package xds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

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
	// ResourceNames are the resources wanted; empty subscribes to every
	// resource of the type (a wildcard, as LDS and CDS are). They can be
	// changed later with SetResourceNames.
	ResourceNames []string
	// WholeSet makes a named subscription's updates over the incremental
	// protocol whole sets, as a wildcard's are: every resource held, not
	// only those a response changed (on-demand clusters use it).
	WholeSet bool
	// OnStreamFailure, when set, is called (on the stream goroutine) each
	// time the stream is lost or cannot be opened, after the
	// subscription's own update_failure: for users that keep stats per
	// resource, as Envoy's EDS clusters do.
	OnStreamFailure func()
}

// ADSSubscription is one resource type on an ADS stream.
type ADSSubscription struct {
	typeURL string
	dec     decoder
	apply   func(Update) error
	stats   subscriptionStats
	empty   *stats.Counter
	timeout time.Duration
	// wake tells the stream that the subscription's interest changed.
	wake func()
	// onFailure is SubscriptionOptions.OnStreamFailure.
	onFailure func()
	// wholeSet is SubscriptionOptions.WholeSet.
	wholeSet bool

	ready     chan struct{}
	readyOnce sync.Once
	// warned holds the unknown-field paths already warned about, and
	// lastRejected the last rejection logged; only the stream goroutine
	// touches them.
	warned       map[string]bool
	lastRejected string
	// held are the resources accepted over the incremental protocol, by
	// name; only the stream goroutine touches them.
	held map[string]heldResource

	mu          sync.Mutex
	version     string
	lastUpdated time.Time
	// names are the resources wanted (nil: all); interest counts their
	// changes, so that a stream knows which it has sent.
	names    []string
	interest uint64
}

// Subscribe adds a subscription to o.TypeURL, one per type. apply is
// called with each response's resources, never concurrently with itself
// (nor with another subscription's); an error it returns NACKs the
// response (counted in update_rejected). A subscription added once the
// stream is started is requested on it at once, as Envoy adds a watch to
// its mux.
func (a *ADS) Subscribe(o SubscriptionOptions, apply func(Update) error) (*ADSSubscription, error) {
	switch {
	case o.TypeURL == "":
		return nil, errors.New("a resource type URL is required")
	case o.Stats == (stats.Scope{}):
		return nil, errors.New("a stats scope is required")
	case apply == nil:
		return nil, errors.New("an apply function is required")
	}
	dec, err := newDecoder(o.TypeURL)
	if err != nil {
		return nil, err
	}
	sub := &ADSSubscription{
		typeURL:   o.TypeURL,
		dec:       dec,
		apply:     apply,
		stats:     newSubscriptionStats(o.Stats),
		empty:     o.Stats.Counter("update_empty"),
		timeout:   o.InitialFetchTimeout,
		wake:      a.poke,
		onFailure: o.OnStreamFailure,
		wholeSet:  o.WholeSet,
		ready:     make(chan struct{}),
		warned:    map[string]bool{},
		held:      map[string]heldResource{},
		names:     sortedNames(o.ResourceNames),
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx.Err() != nil {
		return nil, errors.New("the ADS client is closed")
	}
	if a.opts.TypeURL != "" && o.TypeURL != a.opts.TypeURL {
		return nil, fmt.Errorf("the stream of %s cannot carry %s", a.opts.TypeURL, o.TypeURL)
	}
	if slices.ContainsFunc(a.subs, func(other *ADSSubscription) bool { return other.typeURL == o.TypeURL }) {
		return nil, fmt.Errorf("%s is already subscribed to", o.TypeURL)
	}
	a.subs = append(a.subs, sub)
	if a.started {
		a.startSubscription(sub)
		a.poke()
	}
	return sub, nil
}

// startSubscription counts the subscription's start, as Envoy does, and
// arms its initial fetch timeout. a.mu is held.
func (a *ADS) startSubscription(sub *ADSSubscription) {
	a.streamAttempt(sub)
	if sub.timeout <= 0 {
		return
	}
	t := time.AfterFunc(sub.timeout, func() {
		select {
		case <-sub.ready:
		default:
			sub.stats.initFetchTimeout.Inc()
			a.streamAttempt(sub)
			logging.Warning(a.opts.Log, "ads: initial fetch timed out", "type_url", sub.typeURL, "timeout", sub.timeout.String())
			sub.markReady()
		}
	})
	context.AfterFunc(a.ctx, func() { t.Stop() })
}

// SetResourceNames changes the resources wanted (empty: all of them). The
// stream sends the new set at once, with the last accepted version and
// the last nonce, as Envoy updates a watch's interest.
func (s *ADSSubscription) SetResourceNames(names []string) {
	names = sortedNames(names)
	s.mu.Lock()
	if slices.Equal(names, s.names) {
		s.mu.Unlock()
		return
	}
	s.names = names
	s.interest++
	s.mu.Unlock()
	s.wake()
}

// wanted returns the resources wanted and the count of interest changes.
func (s *ADSSubscription) wanted() ([]string, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names, s.interest
}

// sortedNames is a sorted, deduplicated copy of names; nil when empty.
func sortedNames(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
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
