package cluster

import (
	"strings"
	"testing"
	"time"
)

// TestRetryBudgetInterval: with budget_interval the budget is a share of
// the requests that started within the interval, completed or not, and
// they leave the count once it has passed.
func TestRetryBudgetInterval(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	m, _, clock := newTestManager(t, breakerCluster("retry_budget: {budget_percent: {value: 50}, min_retry_concurrency: 1, budget_interval: 10s}", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	// Four requests, all completed: 50% of them is 2 retries.
	for range 4 {
		conn, err := c.AcquireHTTP1(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		c.ReleaseHTTP1(conn, true)
	}
	for i := range 2 {
		if !c.TryRetry(false) {
			t.Fatalf("retry %d was refused: 4 requests started within the interval allow 2", i+1)
		}
	}
	if c.TryRetry(false) {
		t.Fatal("a third retry was granted: the budget of 4 requests is 2")
	}
	c.ReleaseRetry(false)
	c.ReleaseRetry(false)

	// Half the interval later they still count; past it they do not,
	// and min_retry_concurrency is what is left.
	clock.t = clock.t.Add(5 * time.Second)
	if got := c.breakers().retryLimit(); got != 2 {
		t.Errorf("limit %d after 5 s, want 2", got)
	}
	clock.t = clock.t.Add(6 * time.Second)
	if got := c.breakers().retryLimit(); got != 1 {
		t.Errorf("limit %d after 11 s, want min_retry_concurrency's 1", got)
	}
}

// TestRetryBudgetIntervalInvalid: a negative budget_interval is refused
// with its path.
func TestRetryBudgetIntervalInvalid(t *testing.T) {
	_, err := NewManager(parseClusters(t, breakerCluster("retry_budget: {budget_interval: -1s}", 1)), Options{})
	if err == nil || !strings.Contains(err.Error(), "retry_budget.budget_interval: must be a duration of 0 or more") {
		t.Fatalf("err = %v", err)
	}
}

// TestBudgetWindowSlots: a request leaves the count between nine and ten
// tenths of the interval after it started.
func TestBudgetWindowSlots(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	w := newBudgetWindow(time.Second, func() time.Time { return now })
	w.add()
	now = now.Add(450 * time.Millisecond)
	w.add()
	if got := w.count(); got != 2 {
		t.Fatalf("count %d, want 2", got)
	}
	now = now.Add(600 * time.Millisecond) // 1.05 s after the first
	if got := w.count(); got != 1 {
		t.Fatalf("count %d 1.05 s after the first, want 1", got)
	}
	now = now.Add(time.Hour)
	if got := w.count(); got != 0 {
		t.Fatalf("count %d an hour later, want 0", got)
	}
}
