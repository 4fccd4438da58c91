package controller

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// Metric label values of the kinds.
const (
	kindDrain           = "ProxyDrain"
	kindRuntimeOverride = "ProxyRuntimeOverride"
	kindHealthCheck     = "ProxyHealthCheck"
)

// Results of an admin call, the result label of
// outrigger_controller_admin_calls_total.
const (
	callSuccess     = "success"     // a 200 answer
	callHTTPError   = "http_error"  // another answer: the proxy refused the call
	callTimeout     = "timeout"     // no answer in --admin-timeout
	callUnreachable = "unreachable" // no connection, or it broke
)

// Metrics are the controller's own Prometheus metrics. One value is made
// by NewMetrics and registered once; the reconcilers of every leadership
// term share it. controller-runtime adds its own to the same registry
// (controller_runtime_reconcile_total and friends, per controller).
type Metrics struct {
	adminCalls      *prometheus.CounterVec
	adminLatency    *prometheus.HistogramVec
	targets         *prometheus.GaugeVec
	restarts        *prometheus.CounterVec
	falseRestarts   *prometheus.CounterVec
	reverts         *prometheus.CounterVec
	revertSkipped   *prometheus.CounterVec
	statusWrites    *prometheus.CounterVec
	eventsFolded    *prometheus.CounterVec
	leadershipLost  prometheus.Counter
	leadershipTerms prometheus.Counter

	// mu guards phases: the phase counts of each resource, summed into
	// the targets gauge.
	mu     sync.Mutex
	phases map[resourceKey]map[v1alpha1.TargetPhase]int
}

// resourceKey names one resource for the targets gauge.
type resourceKey struct {
	kind string
	name types.NamespacedName
}

// allPhases are the phases the targets gauge reports, zeros included.
var allPhases = []v1alpha1.TargetPhase{
	v1alpha1.PhasePending, v1alpha1.PhaseInProgress, v1alpha1.PhaseApplied, v1alpha1.PhaseDrained,
	v1alpha1.PhaseConflict, v1alpha1.PhaseFailed, v1alpha1.PhaseReverted,
}

// NewMetrics makes the metrics and registers them with reg (nil: they are
// kept but not exported, as in tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns = "outrigger_controller"
	m := &Metrics{
		adminCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "admin_calls_total",
			Help: "Admin calls made to proxies, by endpoint and result (success, http_error, timeout, unreachable)."},
			[]string{"endpoint", "result"}),
		adminLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "admin_call_duration_seconds",
			Help:    "Time of each admin call to a proxy, answer read, by endpoint.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
			[]string{"endpoint"}),
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "targets",
			Help: "Target pods of the resources this replica reconciles, by kind and phase (zero on a replica that is not the leader)."},
			[]string{"kind", "phase"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "proxy_restarts_total",
			Help: "Proxies found to have lost what was set on them (restarted), and set again."},
			[]string{"kind"}),
		falseRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "false_restarts_total",
			Help: "Restart signals (a later proxy start time, a container restart) that the proxy refuted: it still held every value set on it, so nothing was recorded again."},
			[]string{"kind"}),
		reverts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "reverts_total",
			Help: "Pods whose changes were undone, by result: restored, or restarted (restored on a proxy that had restarted since the changes were made)."},
			[]string{"kind", "result"}),
		revertSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "revert_skipped_total",
			Help: "Pods whose changes were not undone, by reason: abandoned (unreachable after the retries) or pod_gone."},
			[]string{"kind", "reason"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "status_writes_total",
			Help: "Status writes to the API server (a reconcile that changed nothing writes none)."},
			[]string{"kind"}),
		eventsFolded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pod_events_aggregated_total",
			Help: "Pod events not recorded on their pod but counted in one event on the resource, by reason."},
			[]string{"kind", "reason"}),
		leadershipLost: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "leadership_lost_total",
			Help: "Times this replica lost the leader lease without meaning to (API server unreachable past the renew deadline) and stood down to campaign again."}),
		leadershipTerms: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "leadership_acquired_total",
			Help: "Times this replica became the leader."}),
		phases: map[resourceKey]map[v1alpha1.TargetPhase]int{},
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.adminCalls, m.adminLatency, m.targets, m.restarts, m.falseRestarts,
		m.reverts, m.revertSkipped, m.statusWrites, m.eventsFolded, m.leadershipLost, m.leadershipTerms} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.resetTargets()
	return m, nil
}

// AdminObserver is the admin client's observer that feeds the admin call
// metrics.
func (m *Metrics) AdminObserver() adminclient.Observer {
	return func(_, path string, took time.Duration, err error) {
		m.adminCalls.WithLabelValues(path, callResult(err)).Inc()
		m.adminLatency.WithLabelValues(path).Observe(took.Seconds())
	}
}

// callResult classifies an admin call's error.
func callResult(err error) string {
	var se *adminclient.StatusError
	var ne net.Error
	switch {
	case err == nil:
		return callSuccess
	case errors.As(err, &se):
		return callHTTPError
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return callTimeout
	default:
		return callUnreachable
	}
}

// LeadershipAcquired counts a term as leader.
func (m *Metrics) LeadershipAcquired() { m.leadershipTerms.Inc() }

// LeadershipLost counts an unintended loss of the lease, and zeroes the
// targets gauge: a replica that is not the leader works on no pod.
func (m *Metrics) LeadershipLost() {
	m.leadershipLost.Inc()
	m.resetTargets()
}

// resetTargets forgets every resource's phases.
func (m *Metrics) resetTargets() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.phases)
	m.publishLocked()
}

// setTargets records the phases of one resource's targets (nil forgets it,
// when it is gone).
func (m *Metrics) setTargets(kind string, name types.NamespacedName, targets []*v1alpha1.TargetStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := resourceKey{kind: kind, name: name}
	if targets == nil {
		delete(m.phases, k)
	} else {
		counts := map[v1alpha1.TargetPhase]int{}
		for _, t := range targets {
			counts[t.Phase]++
		}
		m.phases[k] = counts
	}
	m.publishLocked()
}

// publishLocked sets the gauge from the per-resource counts.
func (m *Metrics) publishLocked() {
	for _, kind := range []string{kindDrain, kindRuntimeOverride, kindHealthCheck} {
		sums := map[v1alpha1.TargetPhase]int{}
		for k, counts := range m.phases {
			if k.kind != kind {
				continue
			}
			for p, n := range counts {
				sums[p] += n
			}
		}
		for _, p := range allPhases {
			m.targets.WithLabelValues(kind, string(p)).Set(float64(sums[p]))
		}
	}
}
