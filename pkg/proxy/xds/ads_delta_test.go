package xds

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// deltaResource is a Resource of the incremental protocol: the message,
// named by its own name, at version.
func deltaResource(t *testing.T, name, version string, m proto.Message) *discoveryv3.Resource {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &discoveryv3.Resource{Name: name, Version: version, Resource: a}
}

// deltaListener is a listener Resource named name at version.
func deltaListener(t *testing.T, name, version string) *discoveryv3.Resource {
	t.Helper()
	return deltaResource(t, name, version, &listenerv3.Listener{Name: name})
}

func TestADSDeltaWildcard(t *testing.T) {
	srv, conn := startScriptedADS(t)
	store := stats.NewStore()
	ads, err := NewADS(ADSOptions{
		Conn: conn, Node: &corev3.Node{Id: "n1"}, NodeOnFirstMessageOnly: true, Stats: store, Delta: true,
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		applied []string // "name@version ..." of each update
	)
	sub, err := ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("listener_manager.lds.")}, func(u Update) error {
		var got []string
		for i, r := range u.Resources {
			name := r.(*listenerv3.Listener).GetName()
			if name == "refuse" {
				return errors.New("resources[" + string(rune('0'+i)) + "].address: required")
			}
			got = append(got, name+"@"+u.VersionOf(i))
		}
		mu.Lock()
		applied = append(applied, strings.Join(got, " "))
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ads.Close() })
	lastApplied := func() string {
		mu.Lock()
		defer mu.Unlock()
		return applied[len(applied)-1]
	}

	// The legacy wildcard request: the type, the node, no names.
	first := receive(t, srv.deltaRequests)
	if first.GetNode().GetId() != "n1" || first.GetTypeUrl() != ListenerTypeURL || len(first.GetResourceNamesSubscribe()) != 0 || len(first.GetInitialResourceVersions()) != 0 {
		t.Fatalf("first request = %v", first)
	}

	send := func(resp *discoveryv3.DeltaDiscoveryResponse) *discoveryv3.DeltaDiscoveryRequest {
		t.Helper()
		resp.TypeUrl = ListenerTypeURL
		srv.deltaResponses <- resp
		return receive(t, srv.deltaRequests)
	}
	ack := send(&discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: "s1", Nonce: "n-1",
		Resources: []*discoveryv3.Resource{deltaListener(t, "b", "1"), deltaListener(t, "a", "1")}})
	if ack.GetResponseNonce() != "n-1" || ack.GetErrorDetail() != nil || ack.GetNode() != nil || ack.GetTypeUrl() != ListenerTypeURL {
		t.Fatalf("ACK = %v", ack)
	}
	<-sub.Ready()
	if got := lastApplied(); got != "b@1 a@1" {
		t.Fatalf("applied %q", got)
	}

	// A change and a removal: the whole set is applied, the response's
	// resources first.
	if ack := send(&discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: "s2", Nonce: "n-2",
		Resources: []*discoveryv3.Resource{deltaListener(t, "c", "1")}, RemovedResources: []string{"b"}}); ack.GetErrorDetail() != nil {
		t.Fatalf("ACK = %v", ack)
	}
	if got := lastApplied(); got != "c@1 a@1" {
		t.Fatalf("applied %q", got)
	}

	// Envoy's name checks, then apply's refusal with the response's path.
	nack := send(&discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: "s3", Nonce: "n-3",
		Resources: []*discoveryv3.Resource{deltaListener(t, "a", "2"), deltaListener(t, "a", "3")}, RemovedResources: []string{"a"}})
	if msg := nack.GetErrorDetail().GetMessage(); nack.GetResponseNonce() != "n-3" || nack.GetErrorDetail().GetCode() != 13 ||
		!strings.Contains(msg, "resources[1].name: duplicate name a found among added/updated resources") ||
		!strings.Contains(msg, "removed_resources[0]: duplicate name a found in the union of added+removed resources") {
		t.Fatalf("NACK = %v", nack)
	}
	nack = send(&discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: "s4", Nonce: "n-4",
		Resources: []*discoveryv3.Resource{{Name: "hb", Version: "1"}, deltaListener(t, "refuse", "1")}})
	if msg := nack.GetErrorDetail().GetMessage(); msg != "resources[1].resource.address: required" {
		t.Fatalf("NACK message = %q", msg)
	}
	// A resource of another type, refused by the decoder with its path.
	nack = send(&discoveryv3.DeltaDiscoveryResponse{SystemVersionInfo: "s5", Nonce: "n-5",
		Resources: []*discoveryv3.Resource{deltaResource(t, "x", "1", &clusterv3.Cluster{Name: "x"})}})
	if msg := nack.GetErrorDetail().GetMessage(); !strings.HasPrefix(msg, "resources[0].resource: type") {
		t.Fatalf("NACK message = %q", msg)
	}
	if got := lastApplied(); got != "c@1 a@1" {
		t.Fatalf("applied %q after rejections", got)
	}

	// A lost stream: the next one says what is held.
	srv.deltaResponses <- nil
	again := receive(t, srv.deltaRequests)
	if want := map[string]string{"a": "1", "c": "1"}; !maps.Equal(again.GetInitialResourceVersions(), want) ||
		again.GetNode().GetId() != "n1" || len(again.GetResourceNamesSubscribe()) != 0 {
		t.Fatalf("request after reconnecting = %v", again)
	}

	for name, want := range map[string]uint64{
		"listener_manager.lds.update_attempt":  7, // the start, 5 responses, the lost stream
		"listener_manager.lds.update_success":  2,
		"listener_manager.lds.update_rejected": 3,
		"listener_manager.lds.update_failure":  1,
		"listener_manager.lds.update_empty":    0,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := store.TextReadout("listener_manager.lds.version_text").Value(); got != "s2" || sub.Version() != "s2" {
		t.Errorf("version_text = %q, version %q", got, sub.Version())
	}
}

func TestADSDeltaNamedInterest(t *testing.T) {
	srv, conn := startScriptedADS(t)
	store := stats.NewStore()
	ads, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{Id: "n1"}, Stats: store, Delta: true, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		applied []string
	)
	const clusterURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	sub, err := ads.Subscribe(SubscriptionOptions{TypeURL: clusterURL, Stats: store.Scope("cds."), ResourceNames: []string{"x", "y"}}, func(u Update) error {
		mu.Lock()
		defer mu.Unlock()
		for i, r := range u.Resources {
			applied = append(applied, r.(*clusterv3.Cluster).GetName()+"@"+u.VersionOf(i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ads.Close() })

	first := receive(t, srv.deltaRequests)
	if !slices.Equal(first.GetResourceNamesSubscribe(), []string{"x", "y"}) || first.GetNode().GetId() != "n1" {
		t.Fatalf("first request = %v", first)
	}
	srv.deltaResponses <- &discoveryv3.DeltaDiscoveryResponse{TypeUrl: clusterURL, SystemVersionInfo: "s1", Nonce: "n-1",
		Resources: []*discoveryv3.Resource{deltaResource(t, "y", "7", &clusterv3.Cluster{Name: "y"})}}
	if ack := receive(t, srv.deltaRequests); ack.GetResponseNonce() != "n-1" || ack.GetErrorDetail() != nil || ack.GetNode().GetId() != "n1" {
		t.Fatalf("ACK = %v", ack)
	}
	mu.Lock()
	if !slices.Equal(applied, []string{"y@7"}) {
		t.Fatalf("applied %v", applied)
	}
	mu.Unlock()

	// Only the difference is sent; the dropped name is forgotten.
	sub.SetResourceNames([]string{"x", "z"})
	change := receive(t, srv.deltaRequests)
	if !slices.Equal(change.GetResourceNamesSubscribe(), []string{"z"}) || !slices.Equal(change.GetResourceNamesUnsubscribe(), []string{"y"}) {
		t.Fatalf("interest change = %v", change)
	}
	// A reconnection would not claim the forgotten resource.
	srv.deltaResponses <- nil
	if again := receive(t, srv.deltaRequests); len(again.GetInitialResourceVersions()) != 0 ||
		!slices.Equal(again.GetResourceNamesSubscribe(), []string{"x", "z"}) {
		t.Fatalf("request after reconnecting = %v", again)
	}
}

func TestInterestChange(t *testing.T) {
	for _, tc := range []struct {
		prev, next, sub, unsub []string
	}{
		{prev: nil, next: []string{"a"}, sub: []string{"a"}, unsub: []string{"*"}},
		{prev: []string{"a"}, next: nil, sub: []string{"*"}, unsub: []string{"a"}},
		{prev: []string{"a", "b"}, next: []string{"b", "c"}, sub: []string{"c"}, unsub: []string{"a"}},
	} {
		sub, unsub := interestChange(tc.prev, tc.next)
		if !slices.Equal(sub, tc.sub) || !slices.Equal(unsub, tc.unsub) {
			t.Errorf("interestChange(%v, %v) = %v, %v", tc.prev, tc.next, sub, unsub)
		}
	}
}

func TestResponsePaths(t *testing.T) {
	err := errors.Join(
		errors.New("resources[0].connect_timeout: must be positive"),
		errors.New("resources[1]: not a cluster"),
		errors.New("resources[2].name: bad"),
		errors.New("error adding/updating listener(s) x: address: required"),
	)
	got := responsePaths(err, []int{3, 5}, ".resource", []string{"held-one"}).Error()
	want := "resources[3].resource.connect_timeout: must be positive\n" +
		"resources[5]: not a cluster\n" +
		"held resource \"held-one\".name: bad\n" +
		"error adding/updating listener(s) x: address: required"
	if got != want {
		t.Errorf("responsePaths =\n%s\nwant\n%s", got, want)
	}
}
