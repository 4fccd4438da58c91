package cluster

import "testing"

// BenchmarkTryRetry: a retry's breaker unit taken and given back, with
// max_retries and with a retry budget; neither allocates.
func BenchmarkTryRetry(b *testing.B) {
	for _, tc := range []struct{ name, thresholds string }{
		{"max_retries", "max_retries: 3"},
		{"retry_budget", "retry_budget: {}"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, _, _ := newTestManager(b, breakerCluster(tc.thresholds, 9))
			c := m.Cluster("up")
			b.ReportAllocs()
			for b.Loop() {
				if !c.TryRetry(false) {
					b.Fatal("retry refused")
				}
				c.ReleaseRetry(false)
			}
		})
	}
}
