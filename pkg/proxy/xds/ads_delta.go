package xds

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
)

// wildcardName is the incremental protocol's explicit name of every
// resource of a type.
const wildcardName = "*"

// heldResource is a resource accepted over the incremental protocol: its
// version, sent back in initial_resource_versions when a stream opens
// again, and the resource itself, for the whole sets that wildcard
// subscriptions apply.
type heldResource struct {
	version string
	msg     proto.Message
}

// deltaStream is the state of one incremental stream: what was sent on
// it. Only the stream goroutine uses it.
type deltaStream struct {
	st    discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	first bool
	// sent is, by subscription, the interest its requests on this stream
	// carried; a subscription missing from it has not been requested on
	// this stream yet.
	sent map[*ADSSubscription]deltaSent
}

// deltaSent is a subscription's interest as a stream knows it.
type deltaSent struct {
	interest uint64
	names    []string // nil: every resource (a wildcard)
}

// deltaStream runs one incremental stream (Envoy's NewGrpcMuxImpl with
// its delta subscription states): the same subscriptions, init waits and
// stats as the state of the world, with per-resource versions,
// subscribe and unsubscribe requests, removed resources and ACKs that
// carry only the nonce. It reports whether a response arrived.
func (a *ADS) deltaStream() (gotResponse bool) {
	ctx, cancel := a.streamContext()
	defer cancel()
	st, err := openStream[discoveryv3.DeltaDiscoveryRequest, discoveryv3.DeltaDiscoveryResponse](ctx, a.opts.Conn, a.deltaMethod)
	if err != nil {
		a.warn("ads: cannot open the stream", err)
		return false
	}
	s := &deltaStream{st: st, first: true, sent: map[*ADSSubscription]deltaSent{}}
	return pump(a, ctx, st.Recv,
		func() error { return a.deltaRequestChanged(s) },
		func(resp *discoveryv3.DeltaDiscoveryResponse) error { return a.deltaRespond(s, resp) })
}

// deltaSend sends req with the node when it has to be there.
func (a *ADS) deltaSend(s *deltaStream, req *discoveryv3.DeltaDiscoveryRequest) error {
	if s.first || !a.opts.NodeOnFirstMessageOnly {
		req.Node = a.opts.Node
	}
	s.first = false
	if err := a.takeToken(s.st.Context()); err != nil {
		return err
	}
	return s.st.Send(req)
}

// deltaRequestChanged requests the subscriptions not yet requested on
// the stream, or whose interest changed since. A stream's first request
// of a type names what is wanted (nothing for a wildcard, Envoy's legacy
// wildcard request) and, in initial_resource_versions, what is held, so
// that a management server sends only what changed; later ones name the
// names added and dropped.
func (a *ADS) deltaRequestChanged(s *deltaStream) error {
	for _, sub := range a.subscriptions() {
		names, interest := sub.wanted()
		prev, ok := s.sent[sub]
		if ok && prev.interest == interest {
			continue
		}
		sub.forgetUnwanted(names)
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: sub.typeURL}
		if ok {
			req.ResourceNamesSubscribe, req.ResourceNamesUnsubscribe = interestChange(prev.names, names)
		} else {
			req.ResourceNamesSubscribe = names
			req.InitialResourceVersions = sub.heldVersions()
		}
		s.sent[sub] = deltaSent{interest: interest, names: names}
		if err := a.deltaSend(s, req); err != nil {
			return err
		}
	}
	return nil
}

// interestChange is the subscribe and unsubscribe lists that take a
// stream from the names prev to the names next (nil: the wildcard).
func interestChange(prev, next []string) (subscribe, unsubscribe []string) {
	switch {
	case prev == nil && next == nil:
		return nil, nil
	case prev == nil:
		return next, []string{wildcardName}
	case next == nil:
		return []string{wildcardName}, prev
	}
	for _, n := range next {
		if !slices.Contains(prev, n) {
			subscribe = append(subscribe, n)
		}
	}
	for _, n := range prev {
		if !slices.Contains(next, n) {
			unsubscribe = append(unsubscribe, n)
		}
	}
	return subscribe, unsubscribe
}

// forgetUnwanted drops the held resources that names no longer wants, as
// Envoy forgets the resources it unsubscribes from.
func (s *ADSSubscription) forgetUnwanted(names []string) {
	if names == nil {
		return
	}
	maps.DeleteFunc(s.held, func(name string, _ heldResource) bool {
		_, found := slices.BinarySearch(names, name)
		return !found
	})
}

// heldVersions are the held resources' versions by name, nil when none.
func (s *ADSSubscription) heldVersions() map[string]string {
	if len(s.held) == 0 {
		return nil
	}
	out := make(map[string]string, len(s.held))
	for name, r := range s.held {
		out[name] = r.version
	}
	return out
}

// deltaRespond handles one response and sends its ACK (the nonce) or
// NACK (the nonce and error_detail).
func (a *ADS) deltaRespond(s *deltaStream, resp *discoveryv3.DeltaDiscoveryResponse) error {
	sub := a.subscriptionFor(resp.GetTypeUrl(), resp.GetControlPlane())
	if sub == nil {
		return nil
	}
	if len(resp.GetResources()) >= heldGCResources {
		defer a.holdGC()()
	}
	err := a.process(sub, resp.GetSystemVersionInfo(), func() (bool, error) {
		// Envoy's delta subscriptions count no update_empty.
		return false, a.applyDelta(sub, resp)
	})
	if a.ctx.Err() != nil {
		return nil
	}
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: sub.typeURL, ResponseNonce: resp.GetNonce()}
	if err != nil {
		req.ErrorDetail = nackStatus(err)
	}
	return a.deltaSend(s, req)
}

// applyDelta checks one response, decodes its resources as the state of
// the world's are (each Resource wrapper as it is), and applies them:
// a wildcard subscription's whole set, the changed resources otherwise.
// The held resources change only once the update is accepted.
func (a *ADS) applyDelta(sub *ADSSubscription, resp *discoveryv3.DeltaDiscoveryResponse) error {
	if err := checkDeltaNames(resp); err != nil {
		return err
	}
	// A Resource without its resource is a heartbeat (of a TTL): it
	// changes nothing. idx maps the decoded resources to the response's.
	wrapped := &discoveryv3.DiscoveryResponse{TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetSystemVersionInfo()}
	var idx []int
	for i, r := range resp.GetResources() {
		if r.GetResource() == nil {
			continue
		}
		packed, err := anypb.New(r)
		if err != nil {
			return err
		}
		wrapped.Resources = append(wrapped.Resources, packed)
		idx = append(idx, i)
	}
	u, err := a.decode(sub, wrapped)
	if err != nil {
		return responsePaths(err, idx, "", nil)
	}
	next := maps.Clone(sub.held)
	for _, name := range resp.GetRemovedResources() {
		delete(next, name)
	}
	u.ResourceVersions = make([]string, len(u.Resources))
	added := make(map[string]bool, len(u.Resources))
	for j, m := range u.Resources {
		r := resp.GetResources()[idx[j]]
		u.ResourceVersions[j] = r.GetVersion()
		next[r.GetName()] = heldResource{version: r.GetVersion(), msg: m}
		added[r.GetName()] = true
	}
	var rest []string
	if names, _ := sub.wanted(); names == nil || sub.wholeSet {
		// The whole set, as the state of the world's: what the response
		// left alone follows what it brought.
		for _, name := range slices.Sorted(maps.Keys(next)) {
			if !added[name] {
				rest = append(rest, name)
				u.Resources = append(u.Resources, next[name].msg)
				u.ResourceVersions = append(u.ResourceVersions, next[name].version)
			}
		}
	}
	if err := sub.apply(u); err != nil {
		return responsePaths(err, idx, ".resource", rest)
	}
	sub.held = next
	return nil
}

// checkDeltaNames refuses, as Envoy does, a resource without a name and a
// name that comes twice among the added and removed resources.
func checkDeltaNames(resp *discoveryv3.DeltaDiscoveryResponse) error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range resp.GetResources() {
		path := "resources[" + strconv.Itoa(i) + "].name"
		switch name := r.GetName(); {
		case name == "":
			errs = append(errs, fieldErrorf(path, "required: the resource's name"))
		case seen[name]:
			errs = append(errs, fieldErrorf(path, "duplicate name %s found among added/updated resources", name))
		default:
			seen[name] = true
		}
	}
	for i, name := range resp.GetRemovedResources() {
		if seen[name] {
			errs = append(errs, fieldErrorf("removed_resources["+strconv.Itoa(i)+"]", "duplicate name %s found in the union of added+removed resources", name))
		}
		seen[name] = true
	}
	return errors.Join(errs...)
}

// updateIndex finds the index an update's problem starts with.
var updateIndex = regexp.MustCompile(`^resources\[(\d+)\]`)

// responsePaths rewrites the paths of err's problems, which index the
// update, into the response's: the update's resources[j] is the
// response's resources[idx[j]] (with insert, ".resource", when the path
// goes on inside the resource), and, past those, the held resource
// rest[j-len(idx)].
func responsePaths(err error, idx []int, insert string, rest []string) error {
	problems := fieldpath.Split(err)
	for k, p := range problems {
		text := p.Error()
		m := updateIndex.FindStringSubmatchIndex(text)
		if m == nil {
			continue
		}
		j, convErr := strconv.Atoi(text[m[2]:m[3]])
		tail := text[m[1]:]
		switch {
		case convErr != nil:
			continue
		case j < len(idx):
			inside := insert
			if tail == "" || tail[0] != '.' {
				inside = "" // the problem is the resource's as a whole
			}
			problems[k] = errors.New("resources[" + strconv.Itoa(idx[j]) + "]" + inside + tail)
		case j-len(idx) < len(rest):
			problems[k] = errors.New("held resource " + strconv.Quote(rest[j-len(idx)]) + tail)
		}
	}
	return errors.Join(problems...)
}
