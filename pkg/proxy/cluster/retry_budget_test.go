package cluster

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestRetryBudget: with retry_budget the retries in flight are limited
// to budget_percent of the requests active and pending, never below
// min_retry_concurrency, instead of max_retries; rq_retry_open follows
// and remaining_retries stays 0, as in Envoy; /clusters' max_retries is
// the budget's limit at the time.
func TestRetryBudget(t *testing.T) {
	c, store, h := breakerUp(t, "max_retries: 100, track_remaining: true, retry_budget: {budget_percent: {value: 50}, min_retry_concurrency: 1}")
	open := store.Gauge("cluster.up.circuit_breakers.default.rq_retry_open")
	if !c.TryRetry(false) {
		t.Fatal("the first retry was refused: min_retry_concurrency is 1")
	}
	if c.TryRetry(false) {
		t.Fatal("a second retry with no request active was granted: the budget allows 1")
	}
	if open.Value() != 1 {
		t.Errorf("rq_retry_open = %d, want 1", open.Value())
	}
	if got := c.Thresholds(corev3.RoutingPriority_DEFAULT).MaxRetries; got != 1 {
		t.Errorf("max_retries shown %d, want the budget's 1", got)
	}
	// Four requests in flight: 50% of them is 2 retries.
	for range 4 {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		defer c.ReleaseHTTP1(conn, false)
	}
	if !c.TryRetry(false) {
		t.Fatal("a second retry with 4 requests active was refused: the budget allows 2")
	}
	if c.TryRetry(false) {
		t.Fatal("a third retry with 4 requests active was granted")
	}
	c.ReleaseRetry(false)
	if open.Value() != 0 {
		t.Errorf("rq_retry_open = %d after a release, want 0", open.Value())
	}
	if n := store.Gauge("cluster.up.circuit_breakers.default.remaining_retries").Value(); n != 0 {
		t.Errorf("remaining_retries = %d, want 0 with a retry budget", n)
	}
	c.ReleaseRetry(false)
}

// TestRetryBudgetDefaults: an empty retry_budget is Envoy's 20% with at
// least 3 retries.
func TestRetryBudgetDefaults(t *testing.T) {
	c, _, _ := breakerUp(t, "max_retries: 0, retry_budget: {}")
	for i := range 3 {
		if !c.TryRetry(false) {
			t.Fatalf("retry %d refused: min_retry_concurrency defaults to 3", i+1)
		}
	}
	if c.TryRetry(false) {
		t.Fatal("a fourth retry granted with no request active")
	}
}

// TestRetryBudgetBadPercent: budget_percent outside 0-100 is refused
// with its path.
func TestRetryBudgetBadPercent(t *testing.T) {
	_, err := NewManager(parseClusters(t, breakerCluster("retry_budget: {budget_percent: {value: 150}}", 9)), Options{Stats: stats.NewStore()})
	if err == nil || !strings.Contains(err.Error(), "circuit_breakers.thresholds[0].retry_budget.budget_percent") {
		t.Fatalf("error %v, want one naming retry_budget.budget_percent", err)
	}
	configErrors(t, err)
}
