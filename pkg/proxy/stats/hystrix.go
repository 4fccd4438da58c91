package stats

import (
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"time"
)

// DefaultHystrixBuckets is HystrixSink.num_buckets when unset: the rolling
// window covers this many flushes.
const DefaultHystrixBuckets = 10

// HystrixCluster is one upstream cluster as the circuit-breaker dashboard
// reports it.
type HystrixCluster struct {
	// Name names the cluster in the events.
	Name string
	// StatName is the name in the cluster's stats ("cluster.<StatName>."):
	// its alt_stat_name when set; empty means Name.
	StatName string
	// MaxPendingRequests is the default-priority circuit breaker's
	// max_pending_requests, which the dashboard shows as the semaphore and
	// queue limits.
	MaxPendingRequests uint64
}

// HystrixOptions configure a HystrixSink.
type HystrixOptions struct {
	// NumBuckets is the rolling window's length in flushes; zero means
	// DefaultHystrixBuckets.
	NumBuckets int
	// Interval is the stats flush interval. Envoy reports it as the
	// rolling statistical window, and so do we.
	Interval time.Duration
	// Clusters lists the clusters to report, in order, at each flush.
	Clusters func() []HystrixCluster
}

// HystrixSink is the circuit-breaker dashboard sink (Envoy's hystrix
// sink). While at least one client is subscribed, each flush turns every
// cluster's stats into a HystrixCommand and a HystrixThreadPool event,
// counted over a rolling window of the last NumBuckets flushes, and hands
// the formatted text/event-stream data to every subscriber. With no
// subscriber a flush costs nothing and the windows are forgotten, as in
// Envoy: a new client sees counts from its first flush on.
//
// The events follow Envoy's adaptations: thread-pool rejections are the
// pending-request overflows, the circuit is always reported closed, the
// short-circuited count is always 0, latencies are those of the interval
// the flush closes (without a mean). Counts come from the counters'
// flush deltas, so /reset_counters does not disturb the dashboard.
type HystrixSink struct {
	size     int // window slots: num_buckets + 1
	interval time.Duration
	clusters func() []HystrixCluster

	mu      sync.Mutex
	subs    map[*hystrixSubscriber]struct{}
	closed  bool
	current int // the window slot of the latest flush
	windows map[string]*hystrixWindow
	// refs maps the stat names the events are computed from to their
	// cluster, for the cluster list refsFor; rebuilt when it changes.
	refs    map[string]hystrixStatRef
	refsFor []string
	// lastSize is the previous event set's size: the next one is
	// allocated at once (a set is shared with subscribers, so never
	// reused).
	lastSize int
}

// hystrixSubscriber is one stream client. Its channel holds at most one
// event set: a client that falls behind gets the latest set, not a queue.
type hystrixSubscriber struct {
	ch chan []byte
}

// The measures a rolling window keeps per cluster.
const (
	measureSuccess = iota
	measureErrors
	measureTimeouts
	measureRejected
	measureTotal
	numMeasures
)

// hystrixWindow is one cluster's running totals (since the cluster was
// first reported to the current subscribers) and, per measure, the totals
// at the last size flushes.
type hystrixWindow struct {
	totals [numMeasures]int64
	ring   [numMeasures][]int64
	seen   bool // reported by the flush in progress
}

// The cluster counters the events are computed from, by their name after
// "cluster.<name>.".
const (
	counter2xx = iota
	counter4xx
	counter5xx
	counterRetry4xx
	counterRetry5xx
	counterTimeout
	counterPerTryTimeout
	counterPendingOverflow
	numHystrixCounters
)

var hystrixCounterNames = [numHystrixCounters]string{
	counter2xx:             "upstream_rq_2xx",
	counter4xx:             "upstream_rq_4xx",
	counter5xx:             "upstream_rq_5xx",
	counterRetry4xx:        "retry.upstream_rq_4xx",
	counterRetry5xx:        "retry.upstream_rq_5xx",
	counterTimeout:         "upstream_rq_timeout",
	counterPerTryTimeout:   "upstream_rq_per_try_timeout",
	counterPendingOverflow: "upstream_rq_pending_overflow",
}

// hystrixLatencyKeys are the latencyExecute keys (100 x quantile, as
// Envoy's "%g" prints them) and the quantiles they report: the supported
// quantiles less 0.999.
var hystrixLatencyKeys = [...]struct {
	key string
	q   float64
}{{"0", 0}, {"25", 0.25}, {"50", 0.5}, {"75", 0.75}, {"90", 0.9}, {"95", 0.95}, {"99", 0.99}, {"100", 1}}

// hystrixStatRef says which cluster and which stat a stat name is.
type hystrixStatRef struct {
	cluster int
	counter int // a counter index, or one of the two below
}

const (
	refMembershipTotal = -1
	refRequestTime     = -2
)

// NewHystrixSink returns a circuit-breaker dashboard sink.
func NewHystrixSink(o HystrixOptions) *HystrixSink {
	n := o.NumBuckets
	if n <= 0 {
		n = DefaultHystrixBuckets
	}
	if o.Interval <= 0 {
		o.Interval = DefaultFlushInterval
	}
	clusters := o.Clusters
	if clusters == nil {
		clusters = func() []HystrixCluster { return nil }
	}
	return &HystrixSink{
		size:     n + 1,
		interval: o.Interval,
		clusters: clusters,
		subs:     map[*hystrixSubscriber]struct{}{},
		windows:  map[string]*hystrixWindow{},
	}
}

// Subscribe registers a stream client. Every flush then sends it one event
// set: a "data: {...}" line and a blank line per event, the two events of
// each cluster in turn, then the keep-alive ":" line and a blank line. The
// channel is closed by cancel and when the sink closes at shutdown; after
// Close, Subscribe returns a closed channel. cancel may be called more
// than once.
func (h *HystrixSink) Subscribe() (events <-chan []byte, cancel func()) {
	sub := &hystrixSubscriber{ch: make(chan []byte, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(sub.ch)
		return sub.ch, func() {}
	}
	h.subs[sub] = struct{}{}
	return sub.ch, func() { h.unsubscribe(sub) }
}

func (h *HystrixSink) unsubscribe(sub *hystrixSubscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	close(sub.ch)
	if len(h.subs) == 0 {
		clear(h.windows)
	}
}

// Subscribers returns the number of subscribed clients.
func (h *HystrixSink) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Close ends every subscription (their channels close) and refuses new
// ones; the server calls it at shutdown so that open streams end.
func (h *HystrixSink) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for sub := range h.subs {
		close(sub.ch)
	}
	clear(h.subs)
	clear(h.windows)
	return nil
}

// Flush computes the event set of this flush and offers it to every
// subscriber without waiting: a subscriber whose previous set is still
// unread gets this one in its place.
func (h *HystrixSink) Flush(sn *Snapshot) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return nil
	}
	set := h.eventSet(sn)
	for sub := range h.subs {
		select {
		case sub.ch <- set:
		default:
			select {
			case <-sub.ch:
			default:
			}
			select {
			case sub.ch <- set:
			default:
			}
		}
	}
	return nil
}

// clusterFlush is what one flush read for one cluster.
type clusterFlush struct {
	deltas  [numHystrixCounters]uint64
	hosts   int64
	latency *HistogramStatistics // the interval's, nil without data
}

// eventSet advances the rolling windows by one flush and formats the
// events. The caller holds h.mu.
func (h *HystrixSink) eventSet(sn *Snapshot) []byte {
	h.current = (h.current + 1) % h.size
	clusters := h.clusters()
	refs := h.statRefs(clusters)
	read := make([]clusterFlush, len(clusters))
	sn.Counters(func(name []byte, delta, _ uint64) {
		if r, ok := refs[string(name)]; ok && r.counter >= 0 {
			read[r.cluster].deltas[r.counter] += delta
		}
	})
	sn.Gauges(func(name []byte, v int64) {
		if r, ok := refs[string(name)]; ok && r.counter == refMembershipTotal {
			read[r.cluster].hosts = v
		}
	})
	sn.Histograms(func(name []byte, hist *Histogram) {
		if r, ok := refs[string(name)]; ok && r.counter == refRequestTime {
			if st := hist.IntervalStatistics(); st.SampleCount > 0 {
				read[r.cluster].latency = &st
			}
		}
	})

	out := make([]byte, 0, h.lastSize+h.lastSize/8)
	now := sn.Time().Unix()
	for i, c := range clusters {
		w := h.window(c.Name)
		w.add(&read[i].deltas, h.current, h.size)
		out = h.appendCommand(out, c, w, read[i], now)
		out = h.appendThreadPool(out, c, read[i].hosts)
	}
	for name, w := range h.windows {
		if !w.seen {
			delete(h.windows, name) // a cluster that is gone
		}
		w.seen = false
	}
	out = append(out, ":\n\n"...)
	h.lastSize = len(out)
	return out
}

// statRefs returns the stat name index of the cluster list, building it
// only when the list changed since the previous flush. The caller holds
// h.mu.
func (h *HystrixSink) statRefs(clusters []HystrixCluster) map[string]hystrixStatRef {
	same := len(clusters) == len(h.refsFor)
	for i := 0; same && i < len(clusters); i++ {
		same = clusters[i].statName() == h.refsFor[i]
	}
	if same && h.refs != nil {
		return h.refs
	}
	h.refs = make(map[string]hystrixStatRef, len(clusters)*(numHystrixCounters+2))
	h.refsFor = h.refsFor[:0]
	for i, c := range clusters {
		prefix := "cluster." + c.statName() + "."
		for j, name := range hystrixCounterNames {
			h.refs[prefix+name] = hystrixStatRef{cluster: i, counter: j}
		}
		h.refs[prefix+"membership_total"] = hystrixStatRef{cluster: i, counter: refMembershipTotal}
		h.refs[prefix+"upstream_rq_time"] = hystrixStatRef{cluster: i, counter: refRequestTime}
		h.refsFor = append(h.refsFor, c.statName())
	}
	return h.refs
}

// statName is the cluster's name in its stats.
func (c HystrixCluster) statName() string {
	if c.StatName != "" {
		return c.StatName
	}
	return c.Name
}

// window returns the named cluster's window, creating it if needed.
func (h *HystrixSink) window(name string) *hystrixWindow {
	w, ok := h.windows[name]
	if !ok {
		w = &hystrixWindow{}
		h.windows[name] = w
	}
	w.seen = true
	return w
}

// add folds one flush's deltas into the totals and records them in slot
// current. A new window is filled with the first totals, so that its
// rolling counts start at zero, as Envoy's do.
func (w *hystrixWindow) add(d *[numHystrixCounters]uint64, current, size int) {
	timeouts := int64(d[counterTimeout] + d[counterPerTryTimeout])
	// Timeouts are answered 504 and so also counted as 5xx: Envoy takes
	// them out of the errors.
	errs := int64(d[counter5xx]+d[counterRetry5xx]+d[counter4xx]+d[counterRetry4xx]) - int64(d[counterTimeout])
	success := int64(d[counter2xx])
	rejected := int64(d[counterPendingOverflow])
	w.totals[measureSuccess] += success
	w.totals[measureErrors] += errs
	w.totals[measureTimeouts] += timeouts
	w.totals[measureRejected] += rejected
	// Not upstream_rq_total, which is counted before its outcome is known.
	w.totals[measureTotal] += errs + timeouts + success + rejected
	for m := range numMeasures {
		if w.ring[m] == nil {
			w.ring[m] = make([]int64, size)
			for i := range w.ring[m] {
				w.ring[m][i] = w.totals[m]
			}
			continue
		}
		w.ring[m][current] = w.totals[m]
	}
}

// rolling returns a measure's increase over the window; never negative.
func (w *hystrixWindow) rolling(m, current, size int) uint64 {
	d := w.ring[m][current] - w.ring[m][(current+1)%size]
	if d < 0 {
		return 0
	}
	return uint64(d)
}

// eventWriter appends Envoy's hystrix event syntax: `"key": value` pairs
// joined by ", ".
type eventWriter struct {
	b     []byte
	first bool
}

func (e *eventWriter) key(k string) {
	if !e.first {
		e.b = append(e.b, ", "...)
	}
	e.first = false
	e.b = append(append(append(e.b, '"'), k...), "\": "...)
}

func (e *eventWriter) raw(k, v string) { e.key(k); e.b = append(e.b, v...) }

func (e *eventWriter) uint(k string, v uint64) { e.key(k); e.b = strconv.AppendUint(e.b, v, 10) }

func (e *eventWriter) str(k, v string) {
	e.key(k)
	q, _ := json.Marshal(v) // a string always marshals
	e.b = append(e.b, q...)
}

// beginEvent starts a "data: {" event line.
func beginEvent(out []byte) eventWriter {
	return eventWriter{b: append(out, "data: {"...), first: true}
}

// end closes the event and the SSE message.
func (e *eventWriter) end() []byte { return append(e.b, "}\n\n"...) }

func (h *HystrixSink) appendCommand(out []byte, c HystrixCluster, w *hystrixWindow, r clusterFlush, now int64) []byte {
	errs := w.rolling(measureErrors, h.current, h.size)
	timeouts := w.rolling(measureTimeouts, h.current, h.size)
	rejected := w.rolling(measureRejected, h.current, h.size)
	total := w.rolling(measureTotal, h.current, h.size)
	var errorPct uint64
	if total > 0 {
		errorPct = 100 * (errs + timeouts + rejected) / total
	}
	e := beginEvent(out)
	e.str("type", "HystrixCommand")
	e.str("name", c.Name)
	e.str("group", "NA")
	e.uint("currentTime", uint64(max(now, 0)))
	e.raw("isCircuitBreakerOpen", "false")
	e.uint("errorPercentage", errorPct)
	e.uint("errorCount", errs)
	e.uint("requestCount", total)
	e.uint("rollingCountCollapsedRequests", 0)
	e.uint("rollingCountExceptionsThrown", 0)
	e.uint("rollingCountFailure", errs)
	e.uint("rollingCountFallbackFailure", 0)
	e.uint("rollingCountFallbackRejection", 0)
	e.uint("rollingCountFallbackSuccess", 0)
	e.uint("rollingCountResponsesFromCache", 0)
	// Envoy's pending-request overflow plays Hystrix's isolation
	// (semaphore) rejection.
	e.uint("rollingCountSemaphoreRejected", rejected)
	e.uint("rollingCountShortCircuited", 0)
	e.uint("rollingCountSuccess", w.rolling(measureSuccess, h.current, h.size))
	e.uint("rollingCountThreadPoolRejected", 0)
	e.uint("rollingCountTimeout", timeouts)
	e.uint("rollingCountBadRequests", 0)
	e.uint("currentConcurrentExecutionCount", 0)
	e.str("latencyExecute_mean", "null")
	e.key("latencyExecute")
	e.b = appendLatency(e.b, r.latency)
	e.uint("propertyValue_circuitBreakerRequestVolumeThreshold", 0)
	e.uint("propertyValue_circuitBreakerSleepWindowInMilliseconds", 0)
	e.uint("propertyValue_circuitBreakerErrorThresholdPercentage", 0)
	e.raw("propertyValue_circuitBreakerForceOpen", "false")
	e.raw("propertyValue_circuitBreakerForceClosed", "true")
	e.str("propertyValue_executionIsolationStrategy", "SEMAPHORE")
	e.uint("propertyValue_executionIsolationThreadTimeoutInMilliseconds", 0)
	e.raw("propertyValue_executionIsolationThreadInterruptOnTimeout", "false")
	e.uint("propertyValue_executionIsolationSemaphoreMaxConcurrentRequests", c.MaxPendingRequests)
	e.uint("propertyValue_fallbackIsolationSemaphoreMaxConcurrentRequests", 0)
	e.raw("propertyValue_requestCacheEnabled", "false")
	e.raw("propertyValue_requestLogEnabled", "true")
	e.uint("reportingHosts", uint64(max(r.hosts, 0)))
	e.uint("propertyValue_metricsRollingStatisticalWindowInMilliseconds", uint64(h.interval.Milliseconds()))
	return e.end()
}

// appendLatency appends the latencyExecute object: the interval's
// quantiles with six decimals (C++'s std::to_string), in increasing order;
// empty when the interval recorded nothing (Envoy would print "nan", which
// is not JSON).
func appendLatency(b []byte, st *HistogramStatistics) []byte {
	b = append(b, '{')
	if st != nil {
		supported := SupportedQuantiles()
		e := eventWriter{b: b, first: true}
		for _, k := range hystrixLatencyKeys {
			for i, q := range supported {
				if q == k.q && !math.IsNaN(st.Quantiles[i]) {
					e.key(k.key)
					e.b = strconv.AppendFloat(e.b, st.Quantiles[i], 'f', 6, 64)
				}
			}
		}
		b = e.b
	}
	return append(b, '}')
}

func (h *HystrixSink) appendThreadPool(out []byte, c HystrixCluster, hosts int64) []byte {
	e := beginEvent(out)
	e.uint("currentPoolSize", 0)
	e.uint("rollingMaxActiveThreads", 0)
	e.uint("currentActiveCount", 0)
	e.uint("currentCompletedTaskCount", 0)
	e.uint("propertyValue_queueSizeRejectionThreshold", c.MaxPendingRequests)
	e.str("type", "HystrixThreadPool")
	e.uint("reportingHosts", uint64(max(hosts, 0)))
	e.uint("propertyValue_metricsRollingStatisticalWindowInMilliseconds", uint64(h.interval.Milliseconds()))
	e.str("name", c.Name)
	e.uint("currentLargestPoolSize", 0)
	e.uint("currentCorePoolSize", 0)
	e.uint("currentQueueSize", 0)
	e.uint("currentTaskCount", 0)
	e.uint("rollingCountThreadsExecuted", 0)
	e.uint("currentMaximumPoolSize", 0)
	return e.end()
}
