package xds

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestRateLimitSettings(t *testing.T) {
	l, err := (&RateLimit{}).limiter()
	if err != nil {
		t.Fatal(err)
	}
	if l.Burst() != defaultRateLimitTokens || float64(l.Limit()) != defaultRateLimitFill {
		t.Errorf("defaults: burst %d, fill %v; want Envoy's %d and %d", l.Burst(), l.Limit(), defaultRateLimitTokens, defaultRateLimitFill)
	}
	if l, _ := (*RateLimit)(nil).limiter(); l != nil {
		t.Error("a limiter without settings")
	}
	if _, err := (&RateLimit{FillRate: -1}).limiter(); err == nil {
		t.Error("a negative fill rate was accepted")
	}
}

// A request that finds the bucket empty waits for a token, counted in
// rate_limit_enforced and shown in pending_requests meanwhile; a stream
// that ends ends the wait.
func TestTakeTokenWaits(t *testing.T) {
	_, conn := startScriptedADS(t)
	store := stats.NewStore()
	a, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{}, Stats: store, RateLimit: &RateLimit{MaxTokens: 1, FillRate: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.takeToken(ctx); err != nil {
		t.Fatal(err)
	}
	if got := store.Counter("control_plane.rate_limit_enforced").Value(); got != 0 {
		t.Fatalf("rate_limit_enforced after the first token: %d", got)
	}
	if err := a.takeToken(ctx); err != nil {
		t.Fatal(err)
	}
	if got := store.Counter("control_plane.rate_limit_enforced").Value(); got != 1 {
		t.Fatalf("rate_limit_enforced after a wait: %d, want 1", got)
	}
	if got := store.Gauge("control_plane.pending_requests").Value(); got != 0 {
		t.Fatalf("pending_requests after the wait: %d", got)
	}

	slow, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{}, Stats: stats.NewStore(), RateLimit: &RateLimit{MaxTokens: 1, FillRate: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	_ = slow.takeToken(ctx)
	ended, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := slow.takeToken(ended); err == nil {
		t.Fatal("the wait outlived its stream")
	}
}

func TestServiceStreamCarriesItsTypeOnly(t *testing.T) {
	_, conn := startScriptedADS(t)
	a, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{}, Stats: stats.NewStore(), TypeURL: clusterTypeURL})
	if err != nil {
		t.Fatal(err)
	}
	if a.sotwMethod != "/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters" || a.deltaMethod != "/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters" {
		t.Errorf("methods %s, %s", a.sotwMethod, a.deltaMethod)
	}
	noop := func(Update) error { return nil }
	if _, err := a.Subscribe(SubscriptionOptions{TypeURL: ListenerTypeURL, Stats: stats.NewStore().Scope("")}, noop); err == nil {
		t.Error("a listener subscription on the cluster service's stream")
	}
	if _, err := a.Subscribe(SubscriptionOptions{TypeURL: clusterTypeURL, Stats: stats.NewStore().Scope("")}, noop); err != nil {
		t.Error(err)
	}
	if _, err := NewADS(ADSOptions{Conn: conn, Node: &corev3.Node{}, Stats: stats.NewStore(), TypeURL: "type.googleapis.com/x.Y"}); err == nil {
		t.Error("a stream for a type without a discovery service")
	}
}
