package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// rolloutBudget bounds how long one reconcile goes on with batches; the
// rest is done by the next one, so that one big resource does not hold a
// worker for long.
const rolloutBudget = 30 * time.Second

// chunkTime bounds how long a reconcile reads previous values before it
// writes them to the status and sets the values: a rollout writes its
// status about every chunkTime, not once per pod.
const chunkTime = 2 * time.Second

// RuntimeOverrideReconciler keeps the runtime keys and log levels of each
// ProxyRuntimeOverride set on the selected pods' proxies while it exists.
//
// For each pod it first records the values the keys had (persisted in the
// status before anything is set, so that a controller restart in between
// never mistakes the override's own values for the previous ones), then
// sets the keys. Deletion, or the end of the ttl, sets the previous values
// back: a key that existed is set to its previous value, a key that did not
// is removed. A key another override has on record on the pod is left
// alone until that one has set it back (see the conflict rule), so the
// previous values recorded are always those from before any override.
type RuntimeOverrideReconciler struct {
	*env
	checks *checks
}

func newRuntimeOverrideReconciler(e *env) *RuntimeOverrideReconciler {
	return &RuntimeOverrideReconciler{env: e, checks: newChecks()}
}

// setup registers the reconciler and its watches.
func (r *RuntimeOverrideReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("proxyruntimeoverride").
		For(&v1alpha1.ProxyRuntimeOverride{}, builder.WithPredicates(specOrDeletion())).
		Watches(&corev1.Pod{}, podHandler(r.client, listOverrides), builder.WithPredicates(podChanged())).
		Watches(&v1alpha1.ProxyRuntimeOverride{}, siblings(r.client, listOverrides), builder.WithPredicates(specOrDeletion())).
		WithOptions(r.opts.controllerOptions()).
		Complete(r)
}

// listOverrides lists a namespace's overrides for the watches.
func listOverrides(ctx context.Context, c client.Reader, namespace string) ([]selectorRef, error) {
	var list v1alpha1.ProxyRuntimeOverrideList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	refs := make([]selectorRef, len(list.Items))
	for i, o := range list.Items {
		refs[i] = selectorRef{name: o.Name, target: o.Spec.Target}
	}
	return refs, nil
}

// expiry is when an override's ttl ends (zero without one).
func expiry(o *v1alpha1.ProxyRuntimeOverride) time.Time {
	if o.Spec.TTL == nil {
		return time.Time{}
	}
	return o.CreationTimestamp.Add(o.Spec.TTL.Duration)
}

// Reconcile sets the override on the pods that need it.
//
// A rollout goes in chunks: the previous values of as many pods as are read
// in chunkTime (maxConcurrent at a time, at least maxConcurrent pods) are
// written to the status in one write, then the values are set, at most
// maxConcurrent pods at once; the results go with the next chunk's
// records. So a rollout writes the status about once per chunkTime, not
// once per pod, and each pod costs its admin calls only.
func (r *RuntimeOverrideReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var o v1alpha1.ProxyRuntimeOverride
	if err := r.live.Get(ctx, req.NamespacedName, &o); err != nil {
		if apierrors.IsNotFound(err) {
			r.opts.Metrics.setTargets(kindRuntimeOverride, req.NamespacedName, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if o.DeletionTimestamp != nil {
		return r.finalize(ctx, &o)
	}
	if err := r.ensureFinalizer(ctx, &o); err != nil {
		return ctrl.Result{}, err
	}
	sel, err := selectTargets(ctx, r.client, o.Namespace, o.Spec.Target)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	now := r.now()
	m, err := mergeTargets[v1alpha1.RuntimeOverrideTarget](ctx, r.client, o.Namespace, o.Status.Targets, sel, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	base := o.DeepCopy()
	before := slices.Clone(o.Status.Conditions)
	ss := r.newSessions()
	defer ss.close()
	ev := r.newEvents(kindRuntimeOverride, &o)
	defer ev.flush()
	var w wake
	limit := int(o.Spec.Rollout.MaxConcurrent)
	container := containerName(o.Spec.Target)

	if exp := expiry(&o); !exp.IsZero() {
		t := metav1.NewTime(exp)
		o.Status.ExpiresAt = &t
		if !now.Time.Before(exp) {
			return r.expire(ctx, &o, base, ss, ev, sel, m)
		}
		w.add(exp)
	}

	claims, recorded, err := r.claimants(ctx, &o, now.Time, &w)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Pods no longer selected get their values back (with onDelete
	// Revert); their entries go once that is done.
	var released []v1alpha1.RuntimeOverrideTarget
	if o.Spec.OnDelete == v1alpha1.OnDeleteRevert {
		released, _ = revertAll(ctx, r.env, kindRuntimeOverride, ss, ev, &o, m.released, m.releasedPods, limit, &w, r.reverter(&o))
	}

	keys := overrideKeys(&o.Spec)
	held := make([][]string, len(m.targets))
	// signals says why a pod's proxy is thought to have restarted.
	signals := make([]string, len(m.targets))
	var invalid, check, work []int
	for i := range m.targets {
		t := &m.targets[i]
		pod := m.pods[t.PodUID]
		if _, err := endpointFor(pod); err != nil {
			invalid = append(invalid, i)
		}
		var lost, busy map[string]string
		held[i], lost = divide(&o, keys, claimsOn(claims, pod))
		held[i], busy = awaitRelease(held[i], recorded[t.PodUID])
		if len(busy) > 0 {
			// Their release shows in their status only, which does not
			// trigger this reconcile.
			w.after(now.Time, r.opts.RetryBase)
			if lost == nil {
				lost = map[string]string{}
			}
			maps.Copy(lost, busy)
		}
		t.ConflictingKeys = describeLost(lost)
		// Keys lost but still on record here are set back by set() below,
		// before the holder (waiting for this record) writes them.
		if len(held[i]) == 0 && len(onRecord(t)) == 0 {
			setPhase(&t.TargetStatus, v1alpha1.PhaseConflict, "every key is held by another override: "+strings.Join(t.ConflictingKeys, ", "), now)
			t.AppliedKeys = nil
			continue
		}
		switch {
		case t.Phase == v1alpha1.PhaseApplied && t.AppliedGeneration == o.Generation && slices.Equal(t.AppliedKeys, held[i]):
			// The kubelet's restart count needs no admin call.
			if sig := restartSignal(t.ProxyStartTime, t.ProxyRestartCount, nil, proxyRestarts(pod, container)); sig != "" {
				signals[i] = sig
				work = append(work, i)
				continue
			}
			if r.checks.due(checkKey{o.UID, t.PodUID}, now.Time, r.opts.RecheckInterval) {
				check = append(check, i)
			}
			w.after(now.Time, r.opts.RecheckInterval)
		case t.Phase == v1alpha1.PhaseFailed && now.Time.Before(r.retryAt(&t.TargetStatus)):
			w.add(r.retryAt(&t.TargetStatus))
		default:
			work = append(work, i)
		}
	}

	// Ask the applied proxies their uptime: one that restarted has lost
	// the values.
	again := make([]bool, len(m.targets))
	parallel(ctx, limit, check, func(ctx context.Context, i int) {
		t := &m.targets[i]
		pod := m.pods[t.PodUID]
		_, _, obs, err := ss.probe(ctx, pod)
		if err != nil {
			ss.drop(t.PodUID)
			setFailed(&t.TargetStatus, err, r.now())
			w.add(r.retryAt(&t.TargetStatus))
			ev.pod(pod, corev1.EventTypeWarning, reasonAdminCallFailed, "%s", err)
			return
		}
		r.checks.done(checkKey{o.UID, t.PodUID}, now.Time)
		if sig := restartSignal(t.ProxyStartTime, t.ProxyRestartCount, &obs, proxyRestarts(pod, container)); sig != "" {
			signals[i], again[i] = sig, true
		}
	})
	for i := range again {
		if again[i] {
			work = append(work, i)
		}
	}
	sort.Ints(work)

	persist := func() error {
		o.Status.Targets = append(slices.Clone(m.targets), released...)
		sortRecords[v1alpha1.RuntimeOverrideTarget](o.Status.Targets)
		r.summarize(&o, len(sel.pods), m.overflow, invalidNames(m.targets, invalid), false)
		if err := r.patchStatus(ctx, kindRuntimeOverride, &o, base); err != nil {
			return err
		}
		base = o.DeepCopy()
		return nil
	}

	deadline := r.clock.Now().Add(rolloutBudget)
	for next := 0; next < len(work); {
		if r.clock.Now().After(deadline) {
			w.after(r.clock.Now(), 0)
			break
		}
		failed := make([]bool, len(m.targets))
		fail := func(i int, err error) {
			t := &m.targets[i]
			ss.drop(t.PodUID)
			setFailed(&t.TargetStatus, err, r.now())
			w.add(r.retryAt(&t.TargetStatus))
			failed[i] = true
			ev.pod(m.pods[t.PodUID], corev1.EventTypeWarning, reasonAdminCallFailed, "%s", err)
		}
		// Read the previous values of maxConcurrent pods at a time, for
		// up to chunkTime.
		var batch []int
		for chunkStart := r.clock.Now(); next < len(work) && (len(batch) == 0 || r.clock.Since(chunkStart) < chunkTime) &&
			r.clock.Now().Before(deadline); {
			group := work[next:min(next+limit, len(work))]
			next += len(group)
			batch = append(batch, group...)
			parallel(ctx, limit, group, func(ctx context.Context, i int) {
				if err := r.prepare(ctx, ss, ev, m.pods[m.targets[i].PodUID], &m.targets[i], &o, held[i], signals[i]); err != nil {
					fail(i, err)
				}
			})
		}
		// The previous values are on record before anything changes.
		if err := persist(); err != nil {
			return ctrl.Result{}, err
		}
		var ready []int
		for _, i := range batch {
			if !failed[i] {
				ready = append(ready, i)
			}
		}
		parallel(ctx, limit, ready, func(ctx context.Context, i int) {
			t := &m.targets[i]
			pod := m.pods[t.PodUID]
			if err := r.set(ctx, ss, pod, t, &o, held[i]); err != nil {
				fail(i, err)
				return
			}
			r.checks.done(checkKey{o.UID, t.PodUID}, now.Time)
			if len(t.AppliedKeys) == 0 {
				return // it only set back keys it lost
			}
			w.after(now.Time, r.opts.RecheckInterval)
			ev.pod(pod, corev1.EventTypeNormal, reasonApplied, "runtime override set: %s", strings.Join(t.AppliedKeys, ", "))
		})
	}
	if err := persist(); err != nil {
		return ctrl.Result{}, err
	}
	r.transitionEvents(&o, before, o.Status.Conditions)
	log.FromContext(ctx).V(1).Info("reconciled", "selected", len(sel.pods), "worked", len(work), "checked", len(check))
	return w.result(r.clock.Now()), nil
}

// summarize sets the counters and conditions.
func (r *RuntimeOverrideReconciler) summarize(o *v1alpha1.ProxyRuntimeOverride, selected, overflow int, invalid []string, expired bool) {
	s := summary{
		generation: o.Generation, selected: selected, overflow: overflow, invalid: invalid,
		container: containerName(o.Spec.Target), succeeded: "applied", hasConflict: true, expired: expired,
	}
	var conflicts []string
	for i := range o.Status.Targets {
		t := &o.Status.Targets[i]
		s.targets = append(s.targets, t.Common())
		if len(t.ConflictingKeys) > 0 {
			conflicts = append(conflicts, t.PodName+": "+strings.Join(t.ConflictingKeys, ", "))
		}
	}
	if len(conflicts) > 0 && !expired {
		s.conflict = fmt.Sprintf("keys held by older overrides on %s: %s", pods(len(conflicts)), names(conflicts))
	}
	s.apply(&o.Status.CommonStatus)
	r.opts.Metrics.setTargets(kindRuntimeOverride, client.ObjectKeyFromObject(o), s.targets)
}

// overrideClaim is another override and its keys.
type overrideClaim struct {
	claimant
	selector labels.Selector
}

// claimants lists the other overrides of the namespace that take
// precedence over o (older, not being deleted and not expired), and by pod
// UID the keys any other override, whatever its age or state, still has
// on record there. w wakes o when the ttl of one of the first ends.
func (r *RuntimeOverrideReconciler) claimants(ctx context.Context, o *v1alpha1.ProxyRuntimeOverride, now time.Time, w *wake) ([]overrideClaim, map[types.UID][]claimant, error) {
	var list v1alpha1.ProxyRuntimeOverrideList
	if err := r.client.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("list overrides: %w", err)
	}
	var out []overrideClaim
	recorded := map[types.UID][]claimant{}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == o.UID {
			continue
		}
		for j := range other.Status.Targets {
			t := &other.Status.Targets[j]
			if keys := onRecord(t); len(keys) > 0 {
				recorded[t.PodUID] = append(recorded[t.PodUID], claimant{obj: other, keys: keys})
			}
		}
		if other.DeletionTimestamp != nil || !holdsBefore(other, o) {
			continue
		}
		if exp := expiry(other); !exp.IsZero() {
			if !now.Before(exp) {
				continue
			}
			w.add(exp) // its keys are up for taking then
		}
		sel, err := metav1.LabelSelectorAsSelector(&other.Spec.Target.PodSelector)
		if err != nil {
			continue
		}
		out = append(out, overrideClaim{claimant: claimant{obj: other, keys: overrideKeys(&other.Spec)}, selector: sel})
	}
	return out, recorded, nil
}

// claimsOn keeps the claimants that select the pod.
func claimsOn(claims []overrideClaim, pod *corev1.Pod) []claimant {
	var out []claimant
	for _, c := range claims {
		if c.selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, c.claimant)
		}
	}
	return out
}

// describeLost lists lost keys with their holders, sorted.
func describeLost(lost map[string]string) []string {
	out := make([]string, 0, len(lost))
	for k, holder := range lost {
		out = append(out, k+" (held by "+holder+")")
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// onRecord lists the keys a pod's entry answers for: those the override
// set there and those whose previous values it keeps to set back. They
// stay its own, whatever the conflict rule says, until it has set them
// back (see the conflict rule): revert and set() drop them from the entry
// once they are.
func onRecord(t *v1alpha1.RuntimeOverrideTarget) []string {
	keys := slices.Clone(t.AppliedKeys)
	for k := range t.PreviousRuntime {
		keys = append(keys, runtimeKeyPrefix+k)
	}
	for _, k := range t.AddedRuntimeKeys {
		keys = append(keys, runtimeKeyPrefix+k)
	}
	for name := range t.PreviousLogLevels {
		if name == "*" {
			keys = append(keys, allLoggersKey)
		} else {
			keys = append(keys, loggingKeyPrefix+name)
		}
	}
	sort.Strings(keys)
	return slices.Compact(keys)
}

// invalidNames names the pods at the given indexes.
func invalidNames(targets []v1alpha1.RuntimeOverrideTarget, idx []int) []string {
	out := make([]string, len(idx))
	for n, i := range idx {
		out[n] = targets[i].PodName
	}
	return out
}

// captured reports whether the previous value of key is on record.
func captured(t *v1alpha1.RuntimeOverrideTarget, key string) bool {
	if rk, ok := strings.CutPrefix(key, runtimeKeyPrefix); ok {
		_, had := t.PreviousRuntime[rk]
		return had || slices.Contains(t.AddedRuntimeKeys, rk)
	}
	if _, all := t.PreviousLogLevels["*"]; all {
		return true
	}
	if key == allLoggersKey {
		return false
	}
	_, ok := t.PreviousLogLevels[strings.TrimPrefix(key, loggingKeyPrefix)]
	return ok
}

// prepare records, for the keys the override holds on the pod, the values
// they have before it sets them. A proxy seen for the first time has
// nothing of the override's: everything is recorded. After a restart
// signal (given, or found here), the keys the override set are read again
// and those the proxy lost are recorded afresh (see reverify); the others
// keep their records.
func (r *RuntimeOverrideReconciler) prepare(ctx context.Context, ss *sessions, ev *eventBatch, pod *corev1.Pod, t *v1alpha1.RuntimeOverrideTarget, o *v1alpha1.ProxyRuntimeOverride, held []string, signal string) error {
	sess, _, obs, err := ss.probe(ctx, pod)
	if err != nil {
		return err
	}
	restarts := proxyRestarts(pod, containerName(o.Spec.Target))
	switch {
	case t.ProxyStartTime == nil:
		t.PreviousRuntime, t.AddedRuntimeKeys, t.PreviousLogLevels, t.AppliedKeys = nil, nil, nil, nil
		start := obs.record()
		t.ProxyStartTime, t.ProxyRestartCount = &start, restarts
	default:
		if signal == "" {
			signal = restartSignal(t.ProxyStartTime, t.ProxyRestartCount, &obs, restarts)
		}
		if signal == "" {
			break
		}
		lost, known, err := r.reverify(ctx, sess, t, o)
		if err != nil {
			return err
		}
		switch {
		case lost > 0:
			r.opts.Metrics.restarts.WithLabelValues(kindRuntimeOverride).Inc()
			ev.pod(pod, corev1.EventTypeWarning, reasonProxyRestarted, "%s, and it no longer holds %d of the values set: their previous values are recorded again and the override is set again", signal, lost)
		case known:
			r.opts.Metrics.falseRestarts.WithLabelValues(kindRuntimeOverride).Inc()
			log.FromContext(ctx).Info("restart signal refuted: the proxy holds every value set", "pod", pod.Name, "signal", signal)
		default:
			log.FromContext(ctx).Info("restart signal; the spec changed since the values were set, so the records are kept", "pod", pod.Name, "signal", signal)
		}
		// The proxy answering now is the one the records describe.
		start := obs.record()
		t.ProxyStartTime, t.ProxyRestartCount = &start, restarts
	}

	runtimeKeys, logKeys := splitKeys(held, func(k string) bool { return !captured(t, k) })
	if len(runtimeKeys) > 0 {
		rt, err := sess.Runtime(ctx)
		if err != nil {
			return err
		}
		for _, k := range runtimeKeys {
			recordRuntime(t, k, rt)
		}
	}
	if len(logKeys) > 0 {
		levels, err := sess.LogLevels(ctx)
		if err != nil {
			return err
		}
		if err := recordLevels(t, logKeys, levels); err != nil {
			return err
		}
	}
	setPhase(&t.TargetStatus, v1alpha1.PhaseInProgress, "previous values recorded", r.now())
	return nil
}

// recordRuntime records the previous value of runtime key k from a
// /runtime answer: its final value, or that it did not exist.
func recordRuntime(t *v1alpha1.RuntimeOverrideTarget, k string, rt adminclient.Runtime) {
	delete(t.PreviousRuntime, k)
	t.AddedRuntimeKeys = slices.DeleteFunc(t.AddedRuntimeKeys, func(a string) bool { return a == k })
	if e, ok := rt.Entries[k]; ok {
		if t.PreviousRuntime == nil {
			t.PreviousRuntime = map[string]string{}
		}
		t.PreviousRuntime[k] = e.FinalValue
	} else {
		t.AddedRuntimeKeys = append(t.AddedRuntimeKeys, k)
		sort.Strings(t.AddedRuntimeKeys)
	}
	if len(t.AddedRuntimeKeys) == 0 {
		t.AddedRuntimeKeys = nil
	}
}

// reverify reads again, after a restart signal, the keys the override set
// on the pod (at its current generation) and whose previous values are on
// record, and records afresh the previous value of each key the proxy no
// longer holds at the override's value: those it lost, having restarted.
// A key still at the override's value keeps its record, since the value
// there may be the override's own: a previous value on record is never
// one the override set. lost counts the keys recorded afresh (a logger
// counts once); known is false when nothing could be checked because the
// spec changed since the values were set (the values the proxy should
// hold are not known then, and every record is kept).
func (r *RuntimeOverrideReconciler) reverify(ctx context.Context, sess *adminclient.Session, t *v1alpha1.RuntimeOverrideTarget, o *v1alpha1.ProxyRuntimeOverride) (lost int, known bool, err error) {
	if t.AppliedGeneration != o.Generation {
		return 0, false, nil
	}
	runtimeKeys, logKeys := splitKeys(t.AppliedKeys, func(k string) bool { return captured(t, k) })
	if len(runtimeKeys) > 0 {
		rt, err := sess.Runtime(ctx)
		if err != nil {
			return 0, false, err
		}
		for _, k := range runtimeKeys {
			if e, ok := rt.Entries[k]; ok && e.FinalValue == o.Spec.Runtime[k] {
				continue
			}
			recordRuntime(t, k, rt)
			lost++
		}
	}
	if len(logKeys) > 0 {
		levels, err := sess.LogLevels(ctx)
		if err != nil {
			return 0, false, err
		}
		lost += relevel(t, o.Spec.Logging, logKeys, levels)
	}
	return lost, true, nil
}

// relevel is reverify for the logging keys: a logger whose level is not
// the one the override gives it lost it, and its current level is
// recorded in place of the one on record. It returns how many loggers lost
// their level.
func relevel(t *v1alpha1.RuntimeOverrideTarget, spec *v1alpha1.LoggingOverride, keys []string, levels map[string]string) int {
	if spec == nil {
		return 0
	}
	// want is the level the override gives a logger, if any.
	holdsAll := slices.Contains(keys, allLoggersKey)
	want := func(name string) (string, bool) {
		if slices.Contains(keys, loggingKeyPrefix+name) {
			return string(spec.Components[name]), true
		}
		if holdsAll {
			return string(spec.Level), true
		}
		return "", false
	}
	prev := maps.Clone(t.PreviousLogLevels)
	lost := 0
	if holdsAll {
		full := map[string]string{}
		for name, level := range levels {
			if w, _ := want(name); level != w {
				full[name] = level
				lost++
			} else if l, ok := previousLevel(prev, name); ok {
				full[name] = l
			} else {
				full[name] = level
			}
		}
		if lost == 0 {
			return 0
		}
		t.PreviousLogLevels = compressLevels(full)
		return lost
	}
	for _, k := range keys {
		name := strings.TrimPrefix(k, loggingKeyPrefix)
		level, ok := levels[name]
		w, _ := want(name)
		if !ok || level == w {
			continue // a logger the proxy lacks now keeps its record
		}
		if prev == nil {
			prev = map[string]string{}
		}
		prev[name] = level
		lost++
	}
	t.PreviousLogLevels = prev
	return lost
}

// recordLevels records the previous levels of the logging keys.
func recordLevels(t *v1alpha1.RuntimeOverrideTarget, keys []string, levels map[string]string) error {
	prev := t.PreviousLogLevels
	if prev == nil {
		prev = map[string]string{}
	}
	if slices.Contains(keys, allLoggersKey) {
		// Levels recorded for components before stay: the current ones
		// are the override's own.
		all := compressLevels(levels)
		for name, level := range prev {
			all[name] = level
		}
		t.PreviousLogLevels = all
		return nil
	}
	for _, k := range keys {
		name := strings.TrimPrefix(k, loggingKeyPrefix)
		level, ok := levels[name]
		if !ok {
			return fmt.Errorf("logger %q does not exist on the proxy", name)
		}
		prev[name] = level
	}
	t.PreviousLogLevels = prev
	return nil
}

// compressLevels records every logger's level as the most common level
// under "*" plus the loggers at another level, so that the record stays
// small whatever the number of loggers.
func compressLevels(levels map[string]string) map[string]string {
	count := map[string]int{}
	for _, l := range levels {
		count[l]++
	}
	common := ""
	for l, n := range count {
		if common == "" || n > count[common] || (n == count[common] && l < common) {
			common = l
		}
	}
	out := map[string]string{"*": common}
	for name, l := range levels {
		if l != common {
			out[name] = l
		}
	}
	return out
}

// previousLevel is a logger's recorded previous level.
func previousLevel(prev map[string]string, name string) (string, bool) {
	if l, ok := prev[name]; ok {
		return l, true
	}
	l, ok := prev["*"]
	return l, ok
}

// set puts the held keys in place on the pod, after setting back the
// keys on record that the override no longer holds (removed from its spec,
// or lost to an older override).
func (r *RuntimeOverrideReconciler) set(ctx context.Context, ss *sessions, pod *corev1.Pod, t *v1alpha1.RuntimeOverrideTarget, o *v1alpha1.ProxyRuntimeOverride, held []string) error {
	sess, err := ss.get(ctx, pod)
	if err != nil {
		return err
	}
	runtime := map[string]string{}
	// Keys on record that the override no longer holds go back first.
	for k, v := range t.PreviousRuntime {
		if !slices.Contains(held, runtimeKeyPrefix+k) {
			runtime[k] = v
		}
	}
	for _, k := range t.AddedRuntimeKeys {
		if !slices.Contains(held, runtimeKeyPrefix+k) {
			runtime[k] = ""
		}
	}
	for _, k := range held {
		if rk, ok := strings.CutPrefix(k, runtimeKeyPrefix); ok {
			runtime[rk] = o.Spec.Runtime[rk]
		}
	}
	if err := sess.RuntimeModify(ctx, runtime); err != nil {
		return err
	}
	if err := r.setLevels(ctx, sess, t, o.Spec.Logging, held); err != nil {
		return err
	}

	// Forget what went back.
	for k := range t.PreviousRuntime {
		if !slices.Contains(held, runtimeKeyPrefix+k) {
			delete(t.PreviousRuntime, k)
		}
	}
	t.AddedRuntimeKeys = slices.DeleteFunc(t.AddedRuntimeKeys, func(k string) bool { return !slices.Contains(held, runtimeKeyPrefix+k) })
	if len(t.AddedRuntimeKeys) == 0 {
		t.AddedRuntimeKeys = nil
	}
	if len(t.PreviousRuntime) == 0 {
		t.PreviousRuntime = nil
	}
	t.AppliedKeys = slices.Clone(held)
	t.AppliedGeneration = o.Generation
	now := r.now()
	if len(held) == 0 {
		setPhase(&t.TargetStatus, v1alpha1.PhaseConflict, "every key is held by another override: "+strings.Join(t.ConflictingKeys, ", "), now)
		return nil
	}
	msg := ""
	if len(t.ConflictingKeys) > 0 {
		msg = "not set, held by other overrides: " + strings.Join(t.ConflictingKeys, ", ")
	}
	setPhase(&t.TargetStatus, v1alpha1.PhaseApplied, msg, now)
	return nil
}

// setLevels sets back the log levels the override no longer sets, then
// sets the ones it holds: the all-loggers level first, components after.
func (r *RuntimeOverrideReconciler) setLevels(ctx context.Context, sess *adminclient.Session, t *v1alpha1.RuntimeOverrideTarget, spec *v1alpha1.LoggingOverride, held []string) error {
	prev := t.PreviousLogLevels
	holdsAll := slices.Contains(held, allLoggersKey)
	restore := map[string]string{}
	if all, ok := prev["*"]; ok && !holdsAll {
		// The all-loggers level was removed: every logger goes back.
		if err := sess.SetAllLogLevels(ctx, all); err != nil {
			return err
		}
		for name, l := range prev {
			if name != "*" {
				restore[name] = l
			}
		}
	} else {
		for name := range prev {
			if name != "*" && !slices.Contains(held, loggingKeyPrefix+name) {
				restore[name], _ = previousLevel(prev, name)
			}
		}
	}
	if err := sess.SetLogLevels(ctx, restore); err != nil {
		return err
	}
	if holdsAll {
		if err := sess.SetAllLogLevels(ctx, string(spec.Level)); err != nil {
			return err
		}
	}
	components := map[string]string{}
	for _, k := range held {
		if name, ok := strings.CutPrefix(k, loggingKeyPrefix); ok && k != allLoggersKey {
			components[name] = string(spec.Components[name])
		}
	}
	if err := sess.SetLogLevels(ctx, components); err != nil {
		return err
	}

	// Keep on record what the held keys need for a later revert.
	if len(prev) == 0 {
		return nil
	}
	if holdsAll {
		return nil // the "*" record covers every logger
	}
	kept := map[string]string{}
	for name := range components {
		if l, ok := previousLevel(prev, name); ok {
			kept[name] = l
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	t.PreviousLogLevels = kept
	return nil
}

// reverter sets every recorded value back on one pod of o. A proxy that
// restarted since the values were set gets them all the same: a restart
// signal may be wrong, and a proxy that did restart ends up with what it
// had before the override. A signal is reported only when the proxy no
// longer holds the override's runtime values: a kubelet count or an
// uptime read before the reconcile that would have refuted it (the
// resource deleted right after the signal) is a false restart.
func (r *RuntimeOverrideReconciler) reverter(o *v1alpha1.ProxyRuntimeOverride) revertFunc[*v1alpha1.RuntimeOverrideTarget] {
	container := containerName(o.Spec.Target)
	return func(ctx context.Context, ss *sessions, pod *corev1.Pod, t *v1alpha1.RuntimeOverrideTarget) (bool, error) {
		if t.ProxyStartTime == nil {
			setPhase(&t.TargetStatus, v1alpha1.PhaseReverted, "nothing was set", r.now())
			return false, nil
		}
		sess, _, obs, err := ss.probe(ctx, pod)
		if err != nil {
			return false, err
		}
		restarted := restartSignal(t.ProxyStartTime, t.ProxyRestartCount, &obs, proxyRestarts(pod, container)) != ""
		if restarted {
			holds, err := stillHolds(ctx, sess, t, o)
			if err != nil {
				return false, err
			}
			if holds {
				restarted = false
				r.opts.Metrics.falseRestarts.WithLabelValues(kindRuntimeOverride).Inc()
			}
		}
		runtime := map[string]string{}
		maps.Copy(runtime, t.PreviousRuntime)
		for _, k := range t.AddedRuntimeKeys {
			runtime[k] = ""
		}
		if err := sess.RuntimeModify(ctx, runtime); err != nil {
			return false, err
		}
		rest := map[string]string{}
		for name, l := range t.PreviousLogLevels {
			if name == "*" {
				if err := sess.SetAllLogLevels(ctx, l); err != nil {
					return false, err
				}
				continue
			}
			rest[name] = l
		}
		if err := sess.SetLogLevels(ctx, rest); err != nil {
			return false, err
		}
		msg := "previous values restored"
		if restarted {
			msg += " (the proxy had restarted since they were set)"
		}
		setPhase(&t.TargetStatus, v1alpha1.PhaseReverted, msg, r.now())
		t.PreviousRuntime, t.AddedRuntimeKeys, t.PreviousLogLevels, t.AppliedKeys = nil, nil, nil, nil
		return restarted, nil
	}
}

// expire removes the override's values from every pod once its ttl has
// ended; the resource stays, reporting Expired.
func (r *RuntimeOverrideReconciler) expire(ctx context.Context, o *v1alpha1.ProxyRuntimeOverride, base *v1alpha1.ProxyRuntimeOverride, ss *sessions, ev *eventBatch, sel selection, m merged[v1alpha1.RuntimeOverrideTarget]) (ctrl.Result, error) {
	var w wake
	all := append(m.targets, m.released...)
	live := m.pods
	maps.Copy(live, m.releasedPods)
	// Pods never worked on have nothing to undo and no entry to keep.
	all = slices.DeleteFunc(all, func(t v1alpha1.RuntimeOverrideTarget) bool { return t.Phase == v1alpha1.PhasePending })
	_, restarted := revertAll(ctx, r.env, kindRuntimeOverride, ss, ev, o, all, live, int(o.Spec.Rollout.MaxConcurrent), &w, r.reverter(o))
	sortRecords[v1alpha1.RuntimeOverrideTarget](all)
	o.Status.Targets = all
	r.summarize(o, len(sel.pods), m.overflow, nil, true)
	wasExpired := meta.FindStatusCondition(base.Status.Conditions, v1alpha1.ConditionReady)
	if err := r.patchStatus(ctx, kindRuntimeOverride, o, base); err != nil {
		return ctrl.Result{}, err
	}
	if wasExpired == nil || wasExpired.Reason != v1alpha1.ReasonExpired {
		note := fmt.Sprintf("the ttl ended at %s; previous values restored", o.Status.ExpiresAt.UTC().Format(time.RFC3339))
		if len(restarted) > 0 {
			note += fmt.Sprintf(" (on %s the proxy had restarted since they were set: %s)", pods(len(restarted)), names(restarted))
		}
		r.event(o, nil, corev1.EventTypeNormal, reasonExpired, "%s", note)
	}
	return w.result(r.clock.Now()), nil
}

// finalize carries out onDelete, then lets the resource go.
func (r *RuntimeOverrideReconciler) finalize(ctx context.Context, o *v1alpha1.ProxyRuntimeOverride) (ctrl.Result, error) {
	defer r.checks.forget(o.UID)
	if o.Spec.OnDelete != v1alpha1.OnDeleteRevert {
		r.opts.Metrics.setTargets(kindRuntimeOverride, client.ObjectKeyFromObject(o), nil)
		return ctrl.Result{}, r.removeFinalizer(ctx, o)
	}
	return revertOnDelete(ctx, r.env, kindRuntimeOverride, o, &o.Status.Targets, &o.Status.CommonStatus, int(o.Spec.Rollout.MaxConcurrent),
		r.reverter(o),
		summary{generation: o.Generation, container: containerName(o.Spec.Target), hasConflict: true},
		"previous values restored on every pod")
}

// stillHolds reports whether the proxy still holds every runtime value of
// o the records say was set on it. Values compare with the spec as it is,
// whatever its generation (a deletion raises the generation without
// changing the spec); a spec changed since the values were set makes them
// differ, and the signal stands. An override of log levels only cannot be
// told this way.
func stillHolds(ctx context.Context, sess *adminclient.Session, t *v1alpha1.RuntimeOverrideTarget, o *v1alpha1.ProxyRuntimeOverride) (bool, error) {
	keys, _ := splitKeys(t.AppliedKeys, func(string) bool { return true })
	if len(keys) == 0 {
		return false, nil
	}
	rt, err := sess.Runtime(ctx)
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		v, ok := o.Spec.Runtime[k]
		if e, has := rt.Entries[k]; !ok || !has || e.FinalValue != v {
			return false, nil
		}
	}
	return true, nil
}

// splitKeys sorts the held keys that keep accepts into runtime keys (their
// names, without the prefix) and logging keys (as held).
func splitKeys(held []string, keep func(string) bool) (runtimeKeys, logKeys []string) {
	for _, k := range held {
		if !keep(k) {
			continue
		}
		if rk, ok := strings.CutPrefix(k, runtimeKeyPrefix); ok {
			runtimeKeys = append(runtimeKeys, rk)
		} else {
			logKeys = append(logKeys, k)
		}
	}
	return runtimeKeys, logKeys
}
