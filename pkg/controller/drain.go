package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// DrainReconciler drains the selected pods' proxies, at most
// spec.rollout.maxConcurrent at a time, each once.
//
// A pod goes through the steps FailHealthChecks (optional), Delay,
// DrainListeners, WaitForConnections and Quit (optional), each recorded in
// its status entry, keyed by pod UID, before the next one. /drain_listeners
// and /quitquitquit are recorded as requested before they are called: a
// controller that restarts at that moment finds the request on record and
// does not call again, so a pod is never drained twice.
type DrainReconciler struct {
	*env
}

// setup registers the reconciler and its watches.
func (r *DrainReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("proxydrain").
		For(&v1alpha1.ProxyDrain{}, builder.WithPredicates(specOrDeletion())).
		Watches(&corev1.Pod{}, podHandler(r.client, listDrains), builder.WithPredicates(podChanged())).
		WithOptions(r.opts.controllerOptions()).
		Complete(r)
}

// listDrains lists a namespace's drains for the pod watch.
func listDrains(ctx context.Context, c client.Reader, namespace string) ([]selectorRef, error) {
	var list v1alpha1.ProxyDrainList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	refs := make([]selectorRef, len(list.Items))
	for i, d := range list.Items {
		refs[i] = selectorRef{name: d.Name, target: d.Spec.Target}
	}
	return refs, nil
}

// draining reports whether a pod's drain has started and not finished.
func draining(t *v1alpha1.DrainTarget) bool {
	return t.Step != "" && t.Step != v1alpha1.DrainStepDone
}

// Reconcile moves every pod's drain one step on, where it can.
func (r *DrainReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d v1alpha1.ProxyDrain
	if err := r.live.Get(ctx, req.NamespacedName, &d); err != nil {
		if apierrors.IsNotFound(err) {
			r.opts.Metrics.setTargets(kindDrain, req.NamespacedName, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d.DeletionTimestamp != nil {
		return r.finalize(ctx, &d)
	}
	if err := r.ensureFinalizer(ctx, &d); err != nil {
		return ctrl.Result{}, err
	}
	sel, err := selectTargets(ctx, r.client, d.Namespace, d.Spec.Target)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	now := r.now()
	m, err := mergeTargets[v1alpha1.DrainTarget](ctx, r.client, d.Namespace, d.Status.Targets, sel, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A drain is not undone when a pod stops being a target: its entry
	// stays, so that the pod is not drained again if it comes back.
	recs := append(m.targets, m.released...)
	sortRecords[v1alpha1.DrainTarget](recs)
	pods := maps.Clone(m.pods)
	maps.Copy(pods, m.releasedPods)

	base := d.DeepCopy()
	before := slices.Clone(d.Status.Conditions)
	ss := r.newSessions()
	defer ss.close()
	ev := r.newEvents(kindDrain, &d)
	defer ev.flush()
	var w wake
	limit := int(d.Spec.Rollout.MaxConcurrent)

	// Start pending pods, in name order, while fewer than maxConcurrent
	// are draining.
	active := 0
	for i := range recs {
		if draining(&recs[i]) {
			active++
		}
	}
	var invalid []string
	for i := range recs {
		t := &recs[i]
		pod := pods[t.PodUID]
		if _, err := endpointFor(pod); err != nil {
			invalid = append(invalid, t.PodName)
		}
		if t.Phase != v1alpha1.PhasePending || active >= limit {
			continue
		}
		active++
		t.Step = v1alpha1.DrainStepDrainListeners
		if d.Spec.FailHealthChecks {
			t.Step = v1alpha1.DrainStepFailHealthChecks
		}
		setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, "started", now)
	}

	// Record the one-shot calls as requested before making them; a
	// request already on record was made before a controller restart.
	var marked bool
	var due []int
	for i := range recs {
		t := &recs[i]
		if !draining(t) {
			continue
		}
		if t.Phase == v1alpha1.PhaseFailed && now.Time.Before(r.retryAt(&t.TargetStatus)) {
			w.add(r.retryAt(&t.TargetStatus))
			continue
		}
		switch {
		case t.Step == v1alpha1.DrainStepDrainListeners && t.DrainRequestedAt != nil:
			t.DrainStartedAt = t.DrainRequestedAt
			t.Step = v1alpha1.DrainStepWaitForConnections
			setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, fmt.Sprintf("resumed: /drain_listeners was requested at %s, before a controller restart; not sent again", t.DrainRequestedAt.UTC().Format("15:04:05")), now)
		case t.Step == v1alpha1.DrainStepDrainListeners:
			t.DrainRequestedAt = &now
			marked = true
		case t.Step == v1alpha1.DrainStepQuit && t.QuitRequestedAt != nil:
			r.finish(&d, ev, pods[t.PodUID], t, "drained; /quitquitquit was requested before a controller restart, not sent again", now)
			continue
		case t.Step == v1alpha1.DrainStepQuit:
			t.QuitRequestedAt = &now
			marked = true
		}
		due = append(due, i)
	}
	persist := func() error {
		d.Status.Targets = recs
		s := summary{generation: d.Generation, selected: len(sel.pods), overflow: m.overflow, invalid: invalid,
			container: containerName(d.Spec.Target), succeeded: "drained", targets: commons(recs)}
		s.apply(&d.Status.CommonStatus)
		r.opts.Metrics.setTargets(kindDrain, client.ObjectKeyFromObject(&d), s.targets)
		if err := r.patchStatus(ctx, kindDrain, &d, base); err != nil {
			return err
		}
		base = d.DeepCopy()
		return nil
	}
	if marked {
		if err := persist(); err != nil {
			return ctrl.Result{}, err
		}
	}

	parallel(ctx, limit, due, func(ctx context.Context, i int) {
		r.step(ctx, ss, ev, &d, pods[recs[i].PodUID], &recs[i], now, &w)
	})
	// A pod that finished makes room for a pending one at once.
	active, pending := 0, false
	for i := range recs {
		active += btoi(draining(&recs[i]))
		pending = pending || recs[i].Phase == v1alpha1.PhasePending
	}
	if pending && active < limit {
		w.after(now.Time, 0)
	}
	if err := persist(); err != nil {
		return ctrl.Result{}, err
	}
	r.transitionEvents(&d, before, d.Status.Conditions)
	log.FromContext(ctx).V(1).Info("reconciled", "selected", len(sel.pods), "draining", active, "stepped", len(due))
	return w.result(r.clock.Now()), nil
}

// step makes one pod's next admin call and moves it on.
func (r *DrainReconciler) step(ctx context.Context, ss *sessions, ev *eventBatch, d *v1alpha1.ProxyDrain, pod *corev1.Pod, t *v1alpha1.DrainTarget, now metav1.Time, w *wake) {
	fail := func(err error) {
		ss.drop(t.PodUID)
		setFailed(&t.TargetStatus, err, now)
		w.add(r.retryAt(&t.TargetStatus))
		ev.pod(pod, corev1.EventTypeWarning, reasonAdminCallFailed, "%s", err)
	}
	var sess *adminclient.Session
	if t.Step != v1alpha1.DrainStepDelay {
		var err error
		if sess, err = ss.get(ctx, pod); err != nil {
			if t.Step == v1alpha1.DrainStepDrainListeners {
				t.DrainRequestedAt = nil // not sent: it may be sent later
			}
			if t.Step == v1alpha1.DrainStepQuit {
				r.finish(d, ev, pod, t, "drained; /quitquitquit could not be sent: "+err.Error(), now)
				return
			}
			fail(err)
			return
		}
	}

	switch t.Step {
	case v1alpha1.DrainStepFailHealthChecks:
		if err := sess.FailHealthChecks(ctx); err != nil {
			fail(err)
			return
		}
		t.HealthChecksFailedAt = &now
		t.Step = v1alpha1.DrainStepDrainListeners
		if dl := d.Spec.HealthCheckFailDelay; dl != nil && dl.Duration > 0 {
			t.Step = v1alpha1.DrainStepDelay
			w.add(now.Add(dl.Duration + time.Second))
		} else {
			w.after(now.Time, 0)
		}
		setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, "health checks failing", now)

	case v1alpha1.DrainStepDelay:
		// The stored time lost its fraction of a second: round up, so
		// that the delay is never cut short.
		end := t.HealthChecksFailedAt.Truncate(time.Second).Add(time.Second)
		if dl := d.Spec.HealthCheckFailDelay; dl != nil {
			end = end.Add(dl.Duration)
		}
		if now.Time.Before(end) {
			w.add(end)
			return
		}
		t.Step = v1alpha1.DrainStepDrainListeners
		w.after(now.Time, 0)

	case v1alpha1.DrainStepDrainListeners:
		err := sess.DrainListeners(ctx, adminclient.DrainOptions{InboundOnly: d.Spec.InboundOnly, Graceful: d.Spec.Graceful})
		if err != nil {
			t.DrainRequestedAt = nil // refused or unanswered: it may be sent again
			fail(err)
			return
		}
		t.DrainStartedAt = &now
		t.Step = v1alpha1.DrainStepWaitForConnections
		setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, "listeners draining", now)
		w.after(now.Time, r.opts.PollInterval)
		ev.pod(pod, corev1.EventTypeNormal, reasonDrainStarted, "listeners draining")

	case v1alpha1.DrainStepWaitForConnections:
		deadline := t.DrainStartedAt.Add(d.Spec.Completion.Timeout.Duration)
		n, err := sess.ActiveConnections(ctx)
		switch {
		case err == nil && n <= d.Spec.Completion.ActiveConnections:
			t.ActiveConnections = &n
			r.finish(d, ev, pod, t, fmt.Sprintf("drained: %d active connections", n), now)
			if t.Step == v1alpha1.DrainStepQuit {
				w.after(now.Time, 0)
			}
		case !now.Time.Before(deadline):
			t.TimedOut = true
			msg := fmt.Sprintf("drain timed out after %s with %d active connections", d.Spec.Completion.Timeout.Duration, n)
			if err != nil {
				msg = fmt.Sprintf("drain timed out after %s; connections could not be counted: %s", d.Spec.Completion.Timeout.Duration, err)
			} else {
				t.ActiveConnections = &n
			}
			r.finish(d, ev, pod, t, msg, now)
			if t.Step == v1alpha1.DrainStepQuit {
				w.after(now.Time, 0)
			}
		case err != nil:
			fail(err)
			w.add(deadline)
		default:
			t.ActiveConnections = &n
			setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, fmt.Sprintf("waiting for %d active connections to go", n), now)
			w.after(now.Time, r.opts.PollInterval)
			w.add(deadline)
		}

	case v1alpha1.DrainStepQuit:
		msg := "drained; the proxy was told to quit"
		if err := sess.Quit(ctx); err != nil {
			// The request is on record and never repeated: a proxy that
			// went away mid-answer has quit.
			msg = "drained; /quitquitquit was sent, the proxy did not confirm: " + err.Error()
		}
		t.Step = v1alpha1.DrainStepDone
		setPhase(&t.TargetStatus, v1alpha1.PhaseDrained, msg, now)
		ev.pod(pod, corev1.EventTypeNormal, reasonDrained, "%s", msg)
	}
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finish ends a pod's wait: on to Quit if asked, else done.
func (r *DrainReconciler) finish(d *v1alpha1.ProxyDrain, ev *eventBatch, pod *corev1.Pod, t *v1alpha1.DrainTarget, msg string, now metav1.Time) {
	if d.Spec.QuitAfterDrain && t.QuitRequestedAt == nil {
		t.Step = v1alpha1.DrainStepQuit
		setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, msg+"; quitting next", now)
		return
	}
	t.Step = v1alpha1.DrainStepDone
	setPhase(&t.TargetStatus, v1alpha1.PhaseDrained, msg, now)
	if pod != nil {
		ev.pod(pod, corev1.EventTypeNormal, reasonDrained, "%s", msg)
	}
}

// finalize carries out onDelete: Revert makes health checks pass again
// where the drain failed them; listeners stay drained.
func (r *DrainReconciler) finalize(ctx context.Context, d *v1alpha1.ProxyDrain) (ctrl.Result, error) {
	if d.Spec.OnDelete != v1alpha1.OnDeleteRevert || !d.Spec.FailHealthChecks {
		r.opts.Metrics.setTargets(kindDrain, client.ObjectKeyFromObject(d), nil)
		return ctrl.Result{}, r.removeFinalizer(ctx, d)
	}
	return revertOnDelete(ctx, r.env, kindDrain, d, &d.Status.Targets, &d.Status.CommonStatus, int(d.Spec.Rollout.MaxConcurrent), r.revert,
		summary{generation: d.Generation, container: containerName(d.Spec.Target)},
		"health checks pass again on every pod the drain failed them on")
}

// revert makes health checks pass again on a pod where the drain failed
// them.
func (r *DrainReconciler) revert(ctx context.Context, ss *sessions, pod *corev1.Pod, t *v1alpha1.DrainTarget) (bool, error) {
	if t.HealthChecksFailedAt == nil || t.HealthChecksRestored {
		setPhase(&t.TargetStatus, v1alpha1.PhaseReverted, "nothing to undo", r.now())
		return false, nil
	}
	sess, err := ss.get(ctx, pod)
	if err != nil {
		return false, err
	}
	if err := sess.PassHealthChecks(ctx); err != nil {
		return false, err
	}
	t.HealthChecksRestored = true
	setPhase(&t.TargetStatus, v1alpha1.PhaseReverted, "health checks pass again; listeners stay drained", r.now())
	return false, nil
}

// The reconcilers are what controller-runtime calls.
var (
	_ reconcile.Reconciler = (*DrainReconciler)(nil)
	_ reconcile.Reconciler = (*RuntimeOverrideReconciler)(nil)
	_ reconcile.Reconciler = (*HealthCheckReconciler)(nil)
)
