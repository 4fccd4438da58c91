package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// HealthCheckReconciler holds the health-check state a ProxyHealthCheck
// asks for on the selected pods' proxies: /healthcheck/fail or
// /healthcheck/ok, again on proxies that restart, and /healthcheck/ok on
// deletion with onDelete Revert. A pod where another health check still
// has a Fail to undo is left alone until it has (see the conflict rule).
type HealthCheckReconciler struct {
	*env
	checks *checks
}

func newHealthCheckReconciler(e *env) *HealthCheckReconciler {
	return &HealthCheckReconciler{env: e, checks: newChecks()}
}

// setup registers the reconciler and its watches.
func (r *HealthCheckReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("proxyhealthcheck").
		For(&v1alpha1.ProxyHealthCheck{}, builder.WithPredicates(specOrDeletion())).
		Watches(&corev1.Pod{}, podHandler(r.client, listHealthChecks), builder.WithPredicates(podChanged())).
		Watches(&v1alpha1.ProxyHealthCheck{}, siblings(r.client, listHealthChecks), builder.WithPredicates(specOrDeletion())).
		WithOptions(r.opts.controllerOptions()).
		Complete(r)
}

// listHealthChecks lists a namespace's health checks for the watches.
func listHealthChecks(ctx context.Context, c client.Reader, namespace string) ([]selectorRef, error) {
	var list v1alpha1.ProxyHealthCheckList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	refs := make([]selectorRef, len(list.Items))
	for i, hc := range list.Items {
		refs[i] = selectorRef{name: hc.Name, target: hc.Spec.Target}
	}
	return refs, nil
}

// Reconcile brings every target pod to the requested state.
func (r *HealthCheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var hc v1alpha1.ProxyHealthCheck
	if err := r.live.Get(ctx, req.NamespacedName, &hc); err != nil {
		if apierrors.IsNotFound(err) {
			r.opts.Metrics.setTargets(kindHealthCheck, req.NamespacedName, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if hc.DeletionTimestamp != nil {
		return r.finalize(ctx, &hc)
	}
	if err := r.ensureFinalizer(ctx, &hc); err != nil {
		return ctrl.Result{}, err
	}
	sel, err := selectTargets(ctx, r.client, hc.Namespace, hc.Spec.Target)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	now := r.now()
	m, err := mergeTargets[v1alpha1.HealthCheckTarget](ctx, r.client, hc.Namespace, hc.Status.Targets, sel, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	others, undoing, err := r.rivals(ctx, &hc)
	if err != nil {
		return ctrl.Result{}, err
	}
	base := hc.DeepCopy()
	ss := r.newSessions()
	defer ss.close()
	ev := r.newEvents(kindHealthCheck, &hc)
	defer ev.flush()
	var w wake
	var invalid []string
	container := containerName(hc.Spec.Target)
	limit := int(hc.Spec.Rollout.MaxConcurrent)

	released := r.release(ctx, ss, ev, &hc, m.released, m.releasedPods, &w)

	var check, apply []int
	// signals says why a pod's proxy is thought to have lost the state.
	signals := make([]string, len(m.targets))
	for i := range m.targets {
		t := &m.targets[i]
		pod := m.pods[t.PodUID]
		if _, err := endpointFor(pod); err != nil {
			invalid = append(invalid, pod.Name)
		}
		if holder := holderOf(others, pod); holder != "" {
			setPhase(&t.TargetStatus, v1alpha1.PhaseConflict, fmt.Sprintf("held by the older ProxyHealthCheck %s", holder), now)
			t.HeldBy = holder
			// The holder sets its own state over ours: undoing ours later
			// (on delete) would undo the holder's.
			t.AppliedState = ""
			continue
		}
		if holder := undoing[t.PodUID]; holder != "" {
			// Another health check (going, or that lost the pod to this
			// one) has still to undo its Fail here: setting the state
			// before would let its /healthcheck/ok land after ours. Its
			// release shows in its status only, which does not trigger
			// this reconcile.
			setPhase(&t.TargetStatus, v1alpha1.PhaseConflict, fmt.Sprintf("held by the ProxyHealthCheck %s until it undoes its state", holder), now)
			t.HeldBy = holder
			t.AppliedState = ""
			w.after(now.Time, r.opts.RetryBase)
			continue
		}
		t.HeldBy = ""
		switch {
		case t.Phase == v1alpha1.PhaseApplied && t.AppliedState == hc.Spec.State:
			// A restart the kubelet counts is checked at once.
			if restartSignal(t.ProxyStartTime, t.ProxyRestartCount, nil, proxyRestarts(pod, container)) != "" ||
				r.checks.due(checkKey{hc.UID, t.PodUID}, now.Time, r.opts.RecheckInterval) {
				check = append(check, i)
			}
			w.after(now.Time, r.opts.RecheckInterval)
		case t.Phase == v1alpha1.PhaseFailed && now.Time.Before(r.retryAt(&t.TargetStatus)):
			w.add(r.retryAt(&t.TargetStatus))
		default:
			apply = append(apply, i)
		}
	}

	// Recheck the applied pods: a proxy that restarted lost the state.
	again := make([]bool, len(m.targets))
	parallel(ctx, limit, check, func(ctx context.Context, i int) {
		t := &m.targets[i]
		pod := m.pods[t.PodUID]
		_, info, obs, err := ss.probe(ctx, pod)
		if err != nil {
			ss.drop(t.PodUID)
			setFailed(&t.TargetStatus, err, r.now())
			w.add(r.retryAt(&t.TargetStatus))
			ev.pod(pod, corev1.EventTypeWarning, reasonAdminCallFailed, "%s", err)
			return
		}
		r.checks.done(checkKey{hc.UID, t.PodUID}, now.Time)
		sig := restartSignal(t.ProxyStartTime, t.ProxyRestartCount, &obs, proxyRestarts(pod, container))
		switch {
		case t.AppliedState == v1alpha1.HealthCheckFail && info.State == stateLive:
			// The state itself says it: no clock involved.
			signals[i], again[i] = "the proxy answers LIVE: its health checks no longer fail", true
		case sig != "" && t.AppliedState == v1alpha1.HealthCheckFail && info.State == stateDraining:
			// Still failing: the signal was wrong.
			r.opts.Metrics.falseRestarts.WithLabelValues(kindHealthCheck).Inc()
			log.FromContext(ctx).Info("restart signal refuted: the proxy still fails its health checks", "pod", pod.Name, "signal", sig)
			start := obs.record()
			t.ProxyStartTime, t.ProxyRestartCount = &start, proxyRestarts(pod, container)
		case sig != "":
			signals[i], again[i] = sig, true
		}
	})
	for i := range again {
		if again[i] {
			apply = append(apply, i)
		}
	}

	parallel(ctx, limit, apply, func(ctx context.Context, i int) {
		t := &m.targets[i]
		pod := m.pods[t.PodUID]
		if err := r.set(ctx, ss, pod, t, hc.Spec.State, container); err != nil {
			ss.drop(t.PodUID)
			setFailed(&t.TargetStatus, err, r.now())
			w.add(r.retryAt(&t.TargetStatus))
			ev.pod(pod, corev1.EventTypeWarning, reasonAdminCallFailed, "%s", err)
			return
		}
		r.checks.done(checkKey{hc.UID, t.PodUID}, now.Time)
		w.after(now.Time, r.opts.RecheckInterval)
		if signals[i] != "" {
			r.opts.Metrics.restarts.WithLabelValues(kindHealthCheck).Inc()
			ev.pod(pod, corev1.EventTypeWarning, reasonProxyRestarted, "%s: health checks set to %s again", signals[i], hc.Spec.State)
			return
		}
		ev.pod(pod, corev1.EventTypeNormal, reasonHealthCheckSet, "health checks set to %s", hc.Spec.State)
	})

	hc.Status.Targets = append(m.targets, released...)
	sortRecords[v1alpha1.HealthCheckTarget](hc.Status.Targets)
	conflicts := 0
	var holders []string
	for _, t := range m.targets {
		if t.Phase == v1alpha1.PhaseConflict {
			conflicts++
			holders = append(holders, t.PodName+" (held by "+t.HeldBy+")")
		}
	}
	s := summary{
		generation: hc.Generation, selected: len(sel.pods), overflow: m.overflow, invalid: invalid,
		container: containerName(hc.Spec.Target), succeeded: "set to " + string(hc.Spec.State), hasConflict: true,
		targets: commons(hc.Status.Targets),
	}
	if conflicts > 0 {
		s.conflict = fmt.Sprintf("%s held by an older ProxyHealthCheck: %s", pods(conflicts), names(holders))
	}
	s.apply(&hc.Status.CommonStatus)
	r.opts.Metrics.setTargets(kindHealthCheck, client.ObjectKeyFromObject(&hc), s.targets)
	if err := r.patchStatus(ctx, kindHealthCheck, &hc, base); err != nil {
		return ctrl.Result{}, err
	}
	r.transitionEvents(&hc, base.Status.Conditions, hc.Status.Conditions)
	log.FromContext(ctx).V(1).Info("reconciled", "selected", len(sel.pods), "applied", len(apply), "checked", len(check))
	return w.result(r.clock.Now()), nil
}

// /server_info states: LIVE once initialised, with health checks passing
// and no shutdown begun; DRAINING once initialised with health checks
// failing (or shutting down).
const (
	stateLive     = "LIVE"
	stateDraining = "DRAINING"
)

// set asks one proxy for the state, recording its start time and restart
// count.
func (r *HealthCheckReconciler) set(ctx context.Context, ss *sessions, pod *corev1.Pod, t *v1alpha1.HealthCheckTarget, state v1alpha1.HealthCheckState, container string) error {
	sess, _, obs, err := ss.probe(ctx, pod)
	if err != nil {
		return err
	}
	if state == v1alpha1.HealthCheckFail {
		err = sess.FailHealthChecks(ctx)
	} else {
		err = sess.PassHealthChecks(ctx)
	}
	if err != nil {
		return err
	}
	start := obs.record()
	t.ProxyStartTime, t.ProxyRestartCount = &start, proxyRestarts(pod, container)
	t.AppliedState = state
	t.HeldBy = ""
	setPhase(&t.TargetStatus, v1alpha1.PhaseApplied, "", r.now())
	return nil
}

// reverter undoes a Fail on one pod whose proxy container is named
// container. It calls /healthcheck/ok on every proxy it reaches, one that
// restarted since included (a restart signal may be wrong), and reports
// the restart when the proxy had one or passed its health checks already.
func (r *HealthCheckReconciler) reverter(container string) revertFunc[*v1alpha1.HealthCheckTarget] {
	return func(ctx context.Context, ss *sessions, pod *corev1.Pod, t *v1alpha1.HealthCheckTarget) (bool, error) {
		if t.AppliedState != v1alpha1.HealthCheckFail {
			setPhase(&t.TargetStatus, v1alpha1.PhaseReverted, "nothing to undo", r.now())
			return false, nil
		}
		sess, info, obs, err := ss.probe(ctx, pod)
		if err != nil {
			return false, err
		}
		restarted := info.State == stateLive || restartSignal(t.ProxyStartTime, t.ProxyRestartCount, &obs, proxyRestarts(pod, container)) != ""
		if err := sess.PassHealthChecks(ctx); err != nil {
			return false, err
		}
		msg := "health checks pass again"
		if restarted {
			msg += " (the proxy had restarted since they were failed)"
		}
		setPhase(&t.TargetStatus, v1alpha1.PhaseReverted, msg, r.now())
		t.AppliedState = ""
		return restarted, nil
	}
}

// release handles the records of pods that are no longer targets: with
// onDelete Revert the state is undone first. It returns the records still
// waiting for a retry.
func (r *HealthCheckReconciler) release(ctx context.Context, ss *sessions, ev *eventBatch, hc *v1alpha1.ProxyHealthCheck, recs []v1alpha1.HealthCheckTarget, pods map[types.UID]*corev1.Pod, w *wake) []v1alpha1.HealthCheckTarget {
	if hc.Spec.OnDelete != v1alpha1.OnDeleteRevert {
		return nil
	}
	left, _ := revertAll(ctx, r.env, kindHealthCheck, ss, ev, hc, recs, pods, int(hc.Spec.Rollout.MaxConcurrent), w, r.reverter(containerName(hc.Spec.Target)))
	return left
}

// finalize carries out onDelete, then lets the resource go.
func (r *HealthCheckReconciler) finalize(ctx context.Context, hc *v1alpha1.ProxyHealthCheck) (ctrl.Result, error) {
	defer r.checks.forget(hc.UID)
	if hc.Spec.OnDelete != v1alpha1.OnDeleteRevert {
		r.opts.Metrics.setTargets(kindHealthCheck, client.ObjectKeyFromObject(hc), nil)
		return ctrl.Result{}, r.removeFinalizer(ctx, hc)
	}
	return revertOnDelete(ctx, r.env, kindHealthCheck, hc, &hc.Status.Targets, &hc.Status.CommonStatus, int(hc.Spec.Rollout.MaxConcurrent),
		r.reverter(containerName(hc.Spec.Target)),
		summary{generation: hc.Generation, container: containerName(hc.Spec.Target), hasConflict: true},
		"health checks restored on every pod")
}

// rivals lists the other health checks of the namespace, live and not
// being deleted, that take precedence over hc, and by pod UID the one
// (whatever its age or state) that still has a Fail to undo there: its
// entry for the pod keeps appliedState Fail until it has called
// /healthcheck/ok (or dropped the state, having lost the pod).
func (r *HealthCheckReconciler) rivals(ctx context.Context, hc *v1alpha1.ProxyHealthCheck) ([]selectorObj, map[types.UID]string, error) {
	var list v1alpha1.ProxyHealthCheckList
	if err := r.client.List(ctx, &list, client.InNamespace(hc.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("list health checks: %w", err)
	}
	var out []selectorObj
	undoing := map[types.UID]metav1.Object{}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == hc.UID {
			continue
		}
		for _, t := range o.Status.Targets {
			if t.AppliedState == v1alpha1.HealthCheckFail && t.Phase != v1alpha1.PhaseReverted {
				if prev := undoing[t.PodUID]; prev == nil || holdsBefore(o, prev) {
					undoing[t.PodUID] = o
				}
			}
		}
		if o.DeletionTimestamp != nil || !holdsBefore(o, hc) {
			continue
		}
		out = append(out, selectorObj{obj: o, target: o.Spec.Target})
	}
	names := make(map[types.UID]string, len(undoing))
	for uid, o := range undoing {
		names[uid] = o.GetName()
	}
	return out, names, nil
}

// transitionEvents records the resource's Ready and Conflict transitions.
func (e *env) transitionEvents(obj client.Object, before, after []metav1.Condition) {
	if c := meta.FindStatusCondition(after, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue &&
		!meta.IsStatusConditionTrue(before, v1alpha1.ConditionReady) {
		e.event(obj, nil, corev1.EventTypeNormal, reasonRolloutComplete, "%s", c.Message)
	}
	if c := meta.FindStatusCondition(after, v1alpha1.ConditionConflict); c != nil && c.Status == metav1.ConditionTrue &&
		!meta.IsStatusConditionTrue(before, v1alpha1.ConditionConflict) {
		e.event(obj, nil, corev1.EventTypeWarning, reasonConflict, "%s", c.Message)
	}
}
