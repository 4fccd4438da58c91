package xds

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// scriptedADS is a management server that sends the responses it is
// given, one per request after the first, and hands every request over;
// the delta channels do the same on the incremental stream, where a nil
// response ends the stream.
type scriptedADS struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	responses      chan *discoveryv3.DiscoveryResponse
	requests       chan *discoveryv3.DiscoveryRequest
	deltaResponses chan *discoveryv3.DeltaDiscoveryResponse
	deltaRequests  chan *discoveryv3.DeltaDiscoveryRequest
}

func (s *scriptedADS) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return serveScript(st.Recv, st.Send, s.requests, s.responses)
}

func (s *scriptedADS) DeltaAggregatedResources(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return serveScript(st.Recv, st.Send, s.deltaRequests, s.deltaResponses)
}

// serveScript runs one scripted stream: requests go to the channel,
// responses come from the other; a nil response ends the stream.
func serveScript[Req, Resp any](recv func() (*Req, error), send func(*Resp) error, requests chan<- *Req, responses <-chan *Resp) error {
	errc := make(chan error, 1)
	go func() {
		for {
			req, err := recv()
			if err != nil {
				errc <- err
				return
			}
			requests <- req
		}
	}()
	for {
		select {
		case resp := <-responses:
			if resp == nil {
				return errors.New("stream ended by the script")
			}
			if err := send(resp); err != nil {
				return err
			}
		case err := <-errc:
			return err
		}
	}
}

// startScriptedADS serves a scriptedADS on loopback and returns a channel
// to it.
func startScriptedADS(t *testing.T) (*scriptedADS, *grpc.ClientConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	s := &scriptedADS{
		responses:      make(chan *discoveryv3.DiscoveryResponse, 4),
		requests:       make(chan *discoveryv3.DiscoveryRequest, 16),
		deltaResponses: make(chan *discoveryv3.DeltaDiscoveryResponse, 4),
		deltaRequests:  make(chan *discoveryv3.DeltaDiscoveryRequest, 16),
	}
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, s)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, conn
}

// next waits for the next request.
func (s *scriptedADS) next(t *testing.T) *discoveryv3.DiscoveryRequest {
	t.Helper()
	return receive(t, s.requests)
}

// receive waits for the next request on ch.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case req := <-ch:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no request from the client")
		var zero T
		return zero
	}
}

// response is a listener response carrying the messages.
func response(t *testing.T, version, nonce string, ms ...proto.Message) *discoveryv3.DiscoveryResponse {
	t.Helper()
	resp := &discoveryv3.DiscoveryResponse{VersionInfo: version, Nonce: nonce, TypeUrl: ListenerTypeURL}
	for _, m := range ms {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

func TestADSAckNackAndNode(t *testing.T) {
	srv, conn := startScriptedADS(t)
	store := stats.NewStore()
	node := &corev3.Node{Id: "n1", UserAgentName: "outrigger"}
	ads, err := NewADS(ADSOptions{Conn: conn, Node: node, NodeOnFirstMessageOnly: true, Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		applied [][]string
	)
	sub, err := ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("listener_manager.lds.")}, func(u Update) error {
		var names []string
		for _, r := range u.Resources {
			names = append(names, r.(*listenerv3.Listener).GetName())
		}
		if len(names) > 0 && names[0] == "refuse" {
			return errors.New("resources[0].address: required")
		}
		mu.Lock()
		applied = append(applied, names)
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

	first := srv.next(t)
	if first.GetNode().GetId() != "n1" || first.GetTypeUrl() != ListenerTypeURL || first.GetVersionInfo() != "" || first.GetResponseNonce() != "" {
		t.Fatalf("first request = %v", first)
	}
	select {
	case <-sub.Ready():
		t.Fatal("ready before any response")
	default:
	}

	// Accepted: ACK with the version and nonce, no node.
	srv.responses <- response(t, "v1", "n-1", &listenerv3.Listener{Name: "a"})
	ack := srv.next(t)
	if ack.GetVersionInfo() != "v1" || ack.GetResponseNonce() != "n-1" || ack.GetErrorDetail() != nil || ack.GetNode() != nil {
		t.Fatalf("ACK = %v", ack)
	}
	<-sub.Ready()
	if sub.Version() != "v1" || sub.LastUpdated().IsZero() {
		t.Fatalf("version %q, last updated %v", sub.Version(), sub.LastUpdated())
	}

	// Refused by apply: NACK with the previous version and the error.
	srv.responses <- response(t, "v2", "n-2", &listenerv3.Listener{Name: "refuse"})
	nack := srv.next(t)
	if nack.GetVersionInfo() != "v1" || nack.GetResponseNonce() != "n-2" || nack.GetErrorDetail().GetCode() != 13 ||
		!strings.Contains(nack.GetErrorDetail().GetMessage(), "resources[0].address: required") {
		t.Fatalf("NACK = %v", nack)
	}

	// A resource of another type: refused before apply, with its path.
	srv.responses <- response(t, "v3", "n-3", &listenerv3.Listener{Name: "b"}, &clusterv3.Cluster{Name: "c"})
	nack = srv.next(t)
	if nack.GetVersionInfo() != "v1" || !strings.Contains(nack.GetErrorDetail().GetMessage(), "resources[1]: type") {
		t.Fatalf("NACK = %v", nack)
	}

	// A response past gRPC's default 4 MiB limit is received.
	big := strings.Repeat("x", 5<<20)
	srv.responses <- response(t, "big", "n-big", &listenerv3.Listener{Name: "a", StatPrefix: big})
	if ack := srv.next(t); ack.GetVersionInfo() != "big" || ack.GetErrorDetail() != nil {
		t.Fatalf("ACK of a 5 MiB response = version %q, error %v", ack.GetVersionInfo(), ack.GetErrorDetail())
	}

	// An empty set is accepted and counted.
	srv.responses <- response(t, "v4", "n-4")
	if ack := srv.next(t); ack.GetVersionInfo() != "v4" || ack.GetErrorDetail() != nil {
		t.Fatalf("ACK = %v", ack)
	}
	mu.Lock()
	if len(applied) != 3 || applied[0][0] != "a" || applied[1][0] != "a" || len(applied[2]) != 0 {
		t.Fatalf("applied %v", applied)
	}
	mu.Unlock()
	for name, want := range map[string]uint64{
		"listener_manager.lds.update_attempt":  6, // the start, then each response
		"listener_manager.lds.update_success":  3,
		"listener_manager.lds.update_rejected": 2,
		"listener_manager.lds.update_empty":    1,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := store.TextReadout("listener_manager.lds.version_text").Value(); got != "v4" {
		t.Errorf("version_text = %q", got)
	}
	if got := store.Gauge("control_plane.connected_state").Value(); got != 1 {
		t.Errorf("connected_state = %d", got)
	}
	if err := ads.Close(); err != nil {
		t.Fatal(err)
	}
	if got := store.Gauge("control_plane.connected_state").Value(); got != 0 {
		t.Errorf("connected_state after Close = %d", got)
	}
}

func TestADSInitialFetchTimeout(t *testing.T) {
	_, conn := startScriptedADS(t) // never answers
	store := stats.NewStore()
	ads, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{}, Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("lds."), InitialFetchTimeout: 50 * time.Millisecond},
		func(Update) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ads.Close() })
	select {
	case <-sub.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("not ready after the initial fetch timeout")
	}
	if got := store.Counter("lds.init_fetch_timeout").Value(); got != 1 {
		t.Errorf("init_fetch_timeout = %d", got)
	}
	if got := store.Counter("lds.update_attempt").Value(); got != 2 {
		t.Errorf("update_attempt = %d, want 2 (the start and the timeout)", got)
	}
	if _, err := ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("x.")}, func(Update) error { return nil }); err == nil {
		t.Error("a second subscription to the same type succeeded")
	}
	if err := ads.Start(); err == nil {
		t.Error("a second Start succeeded")
	}
}

func TestADSBackoff(t *testing.T) {
	a := &ADS{opts: ADSOptions{BackoffBase: adsBackoffBase, BackoffMax: adsBackoffMax}}
	for attempt := 1; attempt <= 40; attempt++ {
		ceiling := adsBackoffMax
		if attempt < 10 {
			ceiling = min(adsBackoffBase<<(attempt-1), adsBackoffMax)
		}
		for range 50 {
			if d := a.backoff(attempt); d <= 0 || d > ceiling {
				t.Fatalf("attempt %d: delay %v outside (0, %v]", attempt, d, ceiling)
			}
		}
	}
}

func TestADSCloseBeforeStart(t *testing.T) {
	_, conn := startScriptedADS(t)
	ads, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{}, Stats: stats.NewStore()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err == nil {
		t.Error("Start after Close succeeded")
	}
	if _, err := NewADS(ADSOptions{Node: &corev3.Node{}, Stats: stats.NewStore()}); err == nil {
		t.Error("NewADS without a channel succeeded")
	}
}

func TestADSSubscribeWhileRunningAndInterest(t *testing.T) {
	srv, conn := startScriptedADS(t)
	store := stats.NewStore()
	ads, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{Id: "n1"}, NodeOnFirstMessageOnly: true, Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	lds, err := ads.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: store.Scope("lds.")}, func(Update) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ads.Close() })
	if req := srv.next(t); req.GetTypeUrl() != ListenerTypeURL || len(req.GetResourceNames()) != 0 {
		t.Fatalf("first request = %v", req)
	}
	srv.responses <- response(t, "l1", "ln-1", &listenerv3.Listener{Name: "a"})
	if ack := srv.next(t); ack.GetVersionInfo() != "l1" {
		t.Fatalf("ACK = %v", ack)
	}

	// A subscription added while the stream runs is requested on it, with
	// its resource names, and without the node (sent already).
	var got []string
	var mu sync.Mutex
	cds, err := ads.Subscribe(SubscriptionOptions{TypeURL: clusterTypeURL, Stats: store.Scope("cds."), ResourceNames: []string{"b", "a", "b"}},
		func(u Update) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range u.Resources {
				got = append(got, r.(*clusterv3.Cluster).GetName())
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	req := srv.next(t)
	if req.GetTypeUrl() != clusterTypeURL || strings.Join(req.GetResourceNames(), ",") != "a,b" || req.GetNode() != nil || req.GetResponseNonce() != "" {
		t.Fatalf("request of the new subscription = %v", req)
	}
	if got := store.Counter("cds.update_attempt").Value(); got != 1 {
		t.Errorf("cds.update_attempt = %d, want 1 (its start)", got)
	}

	resp := response(t, "c1", "cn-1", &clusterv3.Cluster{Name: "a"})
	resp.TypeUrl = clusterTypeURL
	srv.responses <- resp
	if ack := srv.next(t); ack.GetTypeUrl() != clusterTypeURL || ack.GetVersionInfo() != "c1" || ack.GetResponseNonce() != "cn-1" ||
		strings.Join(ack.GetResourceNames(), ",") != "a,b" {
		t.Fatalf("ACK = %v", ack)
	}
	mu.Lock()
	if strings.Join(got, ",") != "a" {
		t.Errorf("applied %v", got)
	}
	mu.Unlock()

	// A new interest is sent at once, with the last version and nonce; an
	// unchanged one is not sent.
	cds.SetResourceNames([]string{"b", "a"})
	cds.SetResourceNames([]string{"c"})
	req = srv.next(t)
	if req.GetTypeUrl() != clusterTypeURL || strings.Join(req.GetResourceNames(), ",") != "c" ||
		req.GetVersionInfo() != "c1" || req.GetResponseNonce() != "cn-1" {
		t.Fatalf("interest update = %v", req)
	}
	select {
	case extra := <-srv.requests:
		t.Fatalf("unexpected request %v", extra)
	case <-time.After(100 * time.Millisecond):
	}
	if lds.Version() != "l1" || cds.Version() != "c1" {
		t.Errorf("versions %q %q", lds.Version(), cds.Version())
	}
}
