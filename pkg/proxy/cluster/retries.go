package cluster

// TryRetry takes a unit of the cluster's max_retries circuit breaker of a
// routing priority (HIGH when high, else DEFAULT) for a retry about to be
// made; false when the breaker is open (the retry is not made:
// upstream_rq_retry_overflow). The router holds the unit until the
// retried attempt's outcome is known, then gives it back with
// ReleaseRetry, as Envoy's retry state does.
// With a retry budget the limit is the budget's share of the requests
// active and pending at the time.
func (c *Cluster) TryRetry(high bool) bool {
	res := c.breakersOf(high)
	return res.retries.tryAcquireUpTo(res.retryLimit())
}

// ReleaseRetry gives back a unit TryRetry took.
func (c *Cluster) ReleaseRetry(high bool) {
	res := c.breakersOf(high)
	res.retries.releaseUpTo(res.retryLimit())
}
