package adaptiveconcurrency

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// maxSamples bounds the latencies kept between two calculations; past it
// further samples are dropped, which a percentile of that many hardly
// misses.
const maxSamples = 1 << 16

// controller is Envoy's gradient controller (see the package comment).
type controller struct {
	s     settings
	stats controllerStats

	// outstanding counts the requests forwarded and not yet sampled;
	// limit is the concurrency limit; deferred, when not zero, the limit
	// to restore once the minRTT window in progress ends.
	outstanding, limit, deferred atomic.Uint32

	mu sync.Mutex
	// samples are the latencies since the last calculation; epoch the
	// start of the minRTT window (requests sent before it are not
	// sampled).
	samples            []time.Duration
	epoch              time.Time
	minRTT, sampleRTT  time.Duration
	consecutiveMinimum int
	minRTTTimer        *time.Timer
	sampleTimer        *time.Timer
	stopped            bool
}

// controllerStats are Envoy's gradient controller stats.
type controllerStats struct {
	rqBlocked                                  *stats.Counter
	burstQueueSize, concurrencyLimit, gradient *stats.Gauge
	minRTTActive, minRTTMsecs, sampleRTTMsecs  *stats.Gauge
}

func newController(s settings, scope stats.Scope) *controller {
	c := &controller{s: s, stats: controllerStats{
		rqBlocked:        scope.Counter("rq_blocked"),
		burstQueueSize:   scope.Gauge("burst_queue_size"),
		concurrencyLimit: scope.Gauge("concurrency_limit"),
		gradient:         scope.Gauge("gradient"),
		minRTTActive:     scope.Gauge("min_rtt_calculation_active"),
		minRTTMsecs:      scope.Gauge("min_rtt_msecs"),
		sampleRTTMsecs:   scope.Gauge("sample_rtt_msecs"),
	}}
	c.limit.Store(s.minConcurrencyLimit())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.minRTTTimer = time.AfterFunc(time.Hour, c.enterMinRTTWindow)
	c.minRTTTimer.Stop()
	c.sampleTimer = time.AfterFunc(s.sampleRTTCalcInterval(), c.sampleTick)
	if s.fixedMinRTT > 0 {
		// Sampling off: the fixed minRTT holds from the start, and the
		// limit moves from min_concurrency with the sample windows.
		c.minRTT = s.fixedMinRTT
		c.stats.minRTTMsecs.Set(c.minRTT.Milliseconds())
	} else {
		c.enterMinRTTWindowLocked()
	}
	c.stats.concurrencyLimit.Set(int64(c.limit.Load()))
	return c
}

// stop ends the timers.
func (c *controller) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.minRTTTimer.Stop()
	c.sampleTimer.Stop()
}

func (c *controller) inMinRTTWindow() bool { return c.deferred.Load() > 0 }

// enterMinRTTWindow starts measuring the minRTT: the limit drops to
// min_concurrency until enough samples have come.
func (c *controller) enterMinRTTWindow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enterMinRTTWindowLocked()
}

func (c *controller) enterMinRTTWindowLocked() {
	if c.inMinRTTWindow() || c.stopped || c.s.fixedMinRTT > 0 {
		return
	}
	c.stats.minRTTActive.Set(1)
	c.deferred.Store(max(c.limit.Load(), 1))
	c.updateLimitLocked(c.s.minConcurrencyLimit())
	c.samples = c.samples[:0]
	c.epoch = time.Now()
}

// sampleTick is the periodic calculation of the limit, skipped while a
// minRTT window runs (its end starts the timer again).
func (c *controller) sampleTick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.inMinRTTWindow() {
		return
	}
	c.resetSampleWindowLocked()
	c.sampleTimer.Reset(c.s.sampleRTTCalcInterval())
}

// forward decides whether a request may go on, and counts it if so.
func (c *controller) forward() bool {
	for {
		n := c.outstanding.Load()
		if n >= c.limit.Load() {
			c.stats.rqBlocked.Inc()
			return false
		}
		if c.outstanding.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// record samples the latency of a request forwarded at start.
func (c *controller) record(start time.Time) {
	c.outstanding.Add(^uint32(0))
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if start.Before(c.epoch) {
		// Sent before the minRTT window: it may not show the ideal.
		return
	}
	if len(c.samples) < maxSamples {
		c.samples = append(c.samples, now.Sub(start))
	}
	c.updateMinRTTLocked()
}

// cancel forgets a forwarded request that did not complete.
func (c *controller) cancel() { c.outstanding.Add(^uint32(0)) }

// updateMinRTTLocked ends the minRTT window once it has enough samples.
func (c *controller) updateMinRTTLocked() {
	if !c.inMinRTTWindow() || uint32(len(c.samples)) < c.s.minRTTAggregateRequestCount() {
		return
	}
	c.minRTT = c.aggregateLocked()
	c.stats.minRTTMsecs.Set(c.minRTT.Milliseconds())
	c.updateLimitLocked(c.deferred.Load())
	c.deferred.Store(0)
	c.stats.minRTTActive.Set(0)
	if !c.stopped {
		c.minRTTTimer.Reset(c.jittered(c.s.minRTTCalcInterval(), c.s.jitterPercent()))
		c.sampleTimer.Reset(c.s.sampleRTTCalcInterval())
	}
}

// jittered adds up to pct of d, at random, as Envoy's applyJitter.
func (c *controller) jittered(d time.Duration, pct float64) time.Duration {
	ms := d.Milliseconds()
	r := uint64(math.Ceil(float64(ms) * pct))
	if pct == 0 || r == 0 {
		return d
	}
	return time.Duration(ms+int64(rand.Uint64()%r)) * time.Millisecond
}

// resetSampleWindowLocked turns the samples into the sampleRTT and a new
// limit.
func (c *controller) resetSampleWindowLocked() {
	if len(c.samples) == 0 {
		return
	}
	c.sampleRTT = c.aggregateLocked()
	c.stats.sampleRTTMsecs.Set(c.sampleRTT.Milliseconds())
	c.updateLimitLocked(c.newLimitLocked())
}

// aggregateLocked is the configured percentile of the samples, which it
// clears. Envoy estimates it from a circllhist; Outrigger takes it from
// the sorted samples.
func (c *controller) aggregateLocked() time.Duration {
	slices.Sort(c.samples)
	q := c.s.sampleAggregatePercentile()
	pos := q * float64(len(c.samples)-1)
	lo := int(pos)
	v := c.samples[lo]
	if hi := lo + 1; hi < len(c.samples) {
		v += time.Duration(float64(c.samples[hi]-c.samples[lo]) * (pos - float64(lo)))
	}
	c.samples = c.samples[:0]
	// Envoy keeps microseconds.
	return v.Truncate(time.Microsecond)
}

// newLimitLocked is Envoy's calculation: the gradient of the buffered
// minRTT over the sampleRTT, clamped to [0.5, 2], scales the limit, and
// the square root of the result is added as headroom for bursts.
func (c *controller) newLimitLocked() uint32 {
	buffered := float64(c.minRTT) + float64(c.minRTT)*c.s.minRTTBufferPercent()
	gradient := max(0.5, min(2.0, buffered/float64(c.sampleRTT)))
	c.stats.gradient.Set(int64(gradient * 1000))
	limit := float64(c.limit.Load()) * gradient
	headroom := math.Sqrt(limit)
	c.stats.burstQueueSize.Set(int64(headroom))
	next := uint32(min(limit+headroom, math.MaxUint32))
	return max(c.s.lowerLimit(), min(c.s.maxConcurrencyLimit(), next))
}

// updateLimitLocked sets the limit; five calculations in a row at the
// lower bound outside a minRTT window suggest a wrong minRTT: it is
// measured again at once (never with a fixed minRTT).
func (c *controller) updateLimitLocked(next uint32) {
	old := c.limit.Swap(next)
	c.stats.concurrencyLimit.Set(int64(next))
	minimum := c.s.lowerLimit()
	if !c.inMinRTTWindow() && old == minimum && next == minimum {
		c.consecutiveMinimum++
	} else {
		c.consecutiveMinimum = 0
	}
	if c.consecutiveMinimum >= 5 && !c.stopped {
		c.minRTTTimer.Reset(0)
	}
}
