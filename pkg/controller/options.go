package controller

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// Options configure the reconcilers.
type Options struct {
	// Admin makes the admin calls. Required.
	Admin *adminclient.Client
	// Workers is how many resources of each kind are reconciled at once
	// (default 4).
	Workers int
	// RecheckInterval is how often the proxies of applied overrides and
	// health checks are asked for their uptime, to find restarts
	// (default 30s).
	RecheckInterval time.Duration
	// PollInterval is how often a draining pod's connections are counted
	// (default 1s).
	PollInterval time.Duration
	// RetryBase and RetryMax bound the backoff between failed admin calls
	// to one pod: RetryBase doubled per failure, at most RetryMax
	// (defaults 1s and 5m).
	RetryBase, RetryMax time.Duration
	// RevertAttempts is how many failed attempts to undo a pod's changes
	// are made before the pod is given up (with a Warning event), so that
	// an unreachable pod never blocks a deletion for good (default 5).
	RevertAttempts int32
	// Clock tells the time (default the real clock).
	Clock clock.PassiveClock
	// Metrics are the controller's own metrics (default: kept, but not
	// registered anywhere).
	Metrics *Metrics
	// ReconcileBackoffMax caps the backoff between reconciles of a
	// resource that failed (an API error: the API server unreachable, a
	// write conflict), so that the work resumes soon after an outage
	// (default 10s; controller-runtime's own cap is 1000s).
	ReconcileBackoffMax time.Duration
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = 4
	}
	if o.RecheckInterval == 0 {
		o.RecheckInterval = 30 * time.Second
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.RetryBase == 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax == 0 {
		o.RetryMax = 5 * time.Minute
	}
	if o.RevertAttempts == 0 {
		o.RevertAttempts = 5
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Metrics == nil {
		o.Metrics, _ = NewMetrics(nil) // nothing to register: no error
	}
	if o.ReconcileBackoffMax == 0 {
		o.ReconcileBackoffMax = 10 * time.Second
	}
	return o
}

// validate refuses options that cannot work.
func (o Options) validate() error {
	var errs []error
	if o.Admin == nil {
		errs = append(errs, errors.New("admin client is required"))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers must be at least 1, not %d", o.Workers))
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"recheck interval", o.RecheckInterval}, {"poll interval", o.PollInterval}, {"retry base", o.RetryBase}, {"retry max", o.RetryMax},
		{"reconcile backoff max", o.ReconcileBackoffMax}} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %s", f.name, f.d))
		}
	}
	if o.RevertAttempts < 1 {
		errs = append(errs, fmt.Errorf("revert attempts must be at least 1, not %d", o.RevertAttempts))
	}
	if o.RetryMax < o.RetryBase {
		errs = append(errs, fmt.Errorf("retry max %s is below retry base %s", o.RetryMax, o.RetryBase))
	}
	return errors.Join(errs...)
}

// env is what every reconciler works with.
type env struct {
	// client reads from the cache and writes to the API server.
	client client.Client
	// live reads from the API server: the resource itself is read live at
	// the start of each reconcile, because its status is the record of
	// what was done, and a stale copy from the cache would repeat work.
	live     client.Reader
	admin    *adminclient.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	opts     Options
}

// rateLimiter paces the reconciles of a resource that failed: 5 ms
// doubled per failure in a row, at most max, and at most 10 a second with
// bursts of 100 overall (controller-runtime's default but for the cap).
func rateLimiter(max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, max),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// controllerOptions are the options of the three controllers.
func (o Options) controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: o.Workers, RateLimiter: rateLimiter(o.ReconcileBackoffMax)}
}

// Setup registers the three reconcilers with mgr.
func Setup(mgr ctrl.Manager, o Options) error {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return fmt.Errorf("controller options: %w", err)
	}
	e := &env{
		client:   mgr.GetClient(),
		live:     mgr.GetAPIReader(),
		admin:    o.Admin,
		recorder: mgr.GetEventRecorder("outrigger-controller"),
		clock:    o.Clock,
		opts:     o,
	}
	if err := (&DrainReconciler{env: e}).setup(mgr); err != nil {
		return fmt.Errorf("proxydrain controller: %w", err)
	}
	if err := newRuntimeOverrideReconciler(e).setup(mgr); err != nil {
		return fmt.Errorf("proxyruntimeoverride controller: %w", err)
	}
	if err := newHealthCheckReconciler(e).setup(mgr); err != nil {
		return fmt.Errorf("proxyhealthcheck controller: %w", err)
	}
	return nil
}
