package outlier

import (
	"math"
	"sync/atomic"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// origin tells the two success-rate monitors apart: external (HTTP
// statuses, and every result when origins are not split) and local
// (connection results when they are).
type origin int

const (
	external origin = iota
	local
)

// Monitor is one host's outlier state: the counters the data path moves
// with atomics, and the ejection state the detector keeps under its lock.
type Monitor struct {
	d *Detector

	consecutive5xx     atomic.Uint64
	consecutiveGateway atomic.Uint64
	consecutiveLocal   atomic.Uint64
	sr                 [2]srMonitor

	// Guarded by d.mu: the host the monitor stands for (a host kept
	// across a membership update is a new object with the same address,
	// which takes the monitor over) and its ejection history.
	host           *upstream.Host
	ejected        bool
	numEjections   uint32
	lastEjection   time.Time
	lastUnejection time.Time
	// backoff multiplies base_ejection_time: it grows with each ejection
	// and shrinks with each interval the host stays in service.
	backoff uint64
	jitter  time.Duration
	// The degradation of detect_degraded_hosts, kept as the ejection is:
	// degradeBackoff multiplies base_ejection_time.
	degraded                     bool
	lastDegraded, lastUndegraded time.Time
	degradeBackoff               uint64
}

var _ upstream.OutlierMonitor = (*Monitor)(nil)

// srMonitor counts one origin's requests in the current interval's
// bucket while the detector reads the last interval's, as Envoy's
// SuccessRateAccumulator.
type srMonitor struct {
	buckets [2]srBucket
	cur     atomic.Pointer[srBucket]
	// rate is the success rate of the last interval (float64 bits), -1
	// when the host had too few requests: /clusters shows it.
	rate atomic.Uint64
}

type srBucket struct {
	success atomic.Uint64
	total   atomic.Uint64
}

func (s *srMonitor) init() {
	s.cur.Store(&s.buckets[0])
	s.setRate(-1)
}

// swap starts a new interval's bucket and returns the finished one.
func (s *srMonitor) swap() *srBucket {
	old := s.cur.Load()
	next := &s.buckets[0]
	if old == next {
		next = &s.buckets[1]
	}
	next.success.Store(0)
	next.total.Store(0)
	s.cur.Store(next)
	return old
}

// finished returns the success rate (percent) and the request volume of
// the bucket of the last interval; false without requests.
func (s *srMonitor) finished() (rate float64, volume uint64, ok bool) {
	b := &s.buckets[0]
	if s.cur.Load() == b {
		b = &s.buckets[1]
	}
	total := b.total.Load()
	if total == 0 {
		return 0, 0, false
	}
	return float64(b.success.Load()) * 100 / float64(total), total, true
}

func (s *srMonitor) setRate(r float64) { s.rate.Store(math.Float64bits(r)) }

// Rate returns the last computed success rate, -1 for none.
func (s *srMonitor) Rate() float64 { return math.Float64frombits(s.rate.Load()) }

func (s *srMonitor) request(success bool) {
	b := s.cur.Load()
	b.total.Add(1)
	if success {
		b.success.Add(1)
	}
}

// newMonitor builds a monitor for h.
func newMonitor(d *Detector, h *upstream.Host) *Monitor {
	m := &Monitor{d: d, host: h}
	m.sr[external].init()
	m.sr[local].init()
	return m
}

// SuccessRate returns the host's success rate over the last interval
// (percent), -1 when it had too few requests for either success-rate or
// failure-percentage detection; /clusters shows it.
func (m *Monitor) SuccessRate() float64 { return m.sr[external].Rate() }

// LocalOriginSuccessRate is SuccessRate for local-origin results (with
// split_external_local_origin_errors).
func (m *Monitor) LocalOriginSuccessRate() float64 { return m.sr[local].Rate() }

// PutHTTPResponseCode counts an upstream response status: 5xx count
// towards consecutive_5xx (and 502, 503, 504 towards
// consecutive_gateway_failure), anything else resets both.
func (m *Monitor) PutHTTPResponseCode(code int) {
	if code < 500 || code > 599 {
		m.sr[external].request(true)
		m.consecutive5xx.Store(0)
		m.consecutiveGateway.Store(0)
		return
	}
	m.sr[external].request(false)
	d := m.d
	if code >= 502 && code <= 504 {
		if m.consecutiveGateway.Add(1) == d.threshold(keyConsecutiveGateway, d.cfg.ConsecutiveGateway) {
			d.onConsecutive(m, datav3.OutlierEjectionType_CONSECUTIVE_GATEWAY_FAILURE)
		}
	} else {
		m.consecutiveGateway.Store(0)
	}
	if m.consecutive5xx.Add(1) == d.threshold(keyConsecutive5xx, d.cfg.Consecutive5xx) {
		d.onConsecutive(m, datav3.OutlierEjectionType_CONSECUTIVE_5XX)
	}
}

// PutResult counts a result that is not an HTTP status. Without
// split_external_local_origin_errors every result maps to an HTTP status
// (code when given, else connect failure 503, timeout 504, final success
// 200; a connection success alone says nothing). With it, connection
// results go to the local-origin counters and the upstream's own failures
// to the 5xx ones.
func (m *Monitor) PutResult(r upstream.OutlierResult, code int) {
	if !m.d.cfg.SplitExternalLocalOriginErrors {
		if code != 0 {
			m.PutHTTPResponseCode(code)
			return
		}
		switch r {
		case upstream.ExtOriginRequestSuccess, upstream.LocalOriginConnectSuccessFinal:
			m.PutHTTPResponseCode(200)
		case upstream.LocalOriginTimeout:
			m.PutHTTPResponseCode(504)
		case upstream.LocalOriginConnectFailed:
			m.PutHTTPResponseCode(503)
		case upstream.ExtOriginRequestFailed:
			m.PutHTTPResponseCode(500)
		}
		return
	}
	switch r {
	case upstream.LocalOriginConnectSuccess, upstream.LocalOriginConnectSuccessFinal:
		m.localSuccess()
	case upstream.LocalOriginTimeout, upstream.LocalOriginConnectFailed:
		m.localFailure()
	case upstream.ExtOriginRequestFailed:
		m.PutHTTPResponseCode(503)
	case upstream.ExtOriginRequestSuccess:
		m.PutHTTPResponseCode(200)
		m.localSuccess()
	}
}

func (m *Monitor) localSuccess() {
	m.sr[local].request(true)
	m.consecutiveLocal.Store(0)
}

func (m *Monitor) localFailure() {
	m.sr[local].request(false)
	d := m.d
	if m.consecutiveLocal.Add(1) == d.threshold(keyConsecutiveLocalOrigin, d.cfg.ConsecutiveLocalOrigin) {
		d.onConsecutive(m, datav3.OutlierEjectionType_CONSECUTIVE_LOCAL_ORIGIN_FAILURE)
	}
}

// resetConsecutive clears the consecutive-failure counters, as an
// un-ejection does.
func (m *Monitor) resetConsecutive() {
	m.consecutive5xx.Store(0)
	m.consecutiveGateway.Store(0)
	m.consecutiveLocal.Store(0)
}
