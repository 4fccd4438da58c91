package cluster

// TryRetry takes a unit of the cluster's max_retries circuit breaker for a
// retry about to be made; false when the breaker is open (the retry is not
// made: upstream_rq_retry_overflow). The router holds the unit until the
// retried attempt's outcome is known, then gives it back with
// ReleaseRetry, as Envoy's retry state does.
// With a retry budget the limit is the budget's share of the requests
// active and pending at the time.
func (c *Cluster) TryRetry() bool {
	res := c.breakers()
	return res.retries.tryAcquireUpTo(res.retryLimit())
}

// ReleaseRetry gives back a unit TryRetry took.
func (c *Cluster) ReleaseRetry() {
	res := c.breakers()
	res.retries.releaseUpTo(res.retryLimit())
}
