package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// retryAt is when a failed pod may be tried again: RetryBase doubled per
// failure in a row, at most RetryMax, after the last failure.
func (e *env) retryAt(t *v1alpha1.TargetStatus) time.Time {
	if t.LastAttemptTime == nil || t.Attempts == 0 {
		return time.Time{}
	}
	d := e.opts.RetryBase
	for i := int32(1); i < t.Attempts && d < e.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, e.opts.RetryMax)
	return t.LastAttemptTime.Add(d)
}

// now is the current time. The API stores times to the second: a time read
// back from a status is up to a second earlier than the one written.
func (e *env) now() metav1.Time {
	return metav1.NewTime(e.clock.Now())
}

// wake keeps the earliest time a reconcile must come back. The admin calls
// of a reconcile run in parallel, so it is safe for concurrent use.
type wake struct {
	mu sync.Mutex
	at time.Time
}

// add records t (zero times are ignored).
func (w *wake) add(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !t.IsZero() && (w.at.IsZero() || t.Before(w.at)) {
		w.at = t
	}
}

// after records now+d.
func (w *wake) after(now time.Time, d time.Duration) { w.add(now.Add(d)) }

// result turns the wake time into a reconcile result.
func (w *wake) result(now time.Time) ctrl.Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at.IsZero() {
		return ctrl.Result{}
	}
	d := w.at.Sub(now)
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return ctrl.Result{RequeueAfter: d}
}

// parallel runs fn for each index in items, at most limit at once, and
// waits for all of them.
func parallel(ctx context.Context, limit int, items []int, fn func(ctx context.Context, i int)) {
	if limit < 1 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, i := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(ctx, i)
		}()
	}
	wg.Wait()
}

// sessions keeps one admin session per pod for the length of a reconcile,
// so that the reads and writes made for a pod share one port-forward.
type sessions struct {
	admin *adminclient.Client
	clock clock.PassiveClock
	mu    sync.Mutex
	open  map[types.UID]*adminclient.Session
}

func (e *env) newSessions() *sessions {
	return &sessions{admin: e.admin, clock: e.clock, open: map[types.UID]*adminclient.Session{}}
}

// get returns the pod's session, opening it on first use.
func (s *sessions) get(ctx context.Context, pod *corev1.Pod) (*adminclient.Session, error) {
	s.mu.Lock()
	sess, ok := s.open[pod.UID]
	s.mu.Unlock()
	if ok {
		return sess, nil
	}
	ep, err := endpointFor(pod)
	if err != nil {
		return nil, err
	}
	sess, err = s.admin.Session(ctx, ep)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.open[pod.UID]; ok {
		_ = sess.Close()
		return prev, nil
	}
	s.open[pod.UID] = sess
	return sess, nil
}

// probe opens the pod's session and reads /server_info, whose uptime,
// read between two clock readings taken right around the call, bounds
// when the proxy started.
func (s *sessions) probe(ctx context.Context, pod *corev1.Pod) (*adminclient.Session, adminclient.ServerInfo, observedStart, error) {
	sess, err := s.get(ctx, pod)
	if err != nil {
		return nil, adminclient.ServerInfo{}, observedStart{}, err
	}
	before := s.clock.Now()
	info, err := sess.ServerInfo(ctx)
	after := s.clock.Now()
	if err != nil {
		return nil, adminclient.ServerInfo{}, observedStart{}, err
	}
	return sess, info, observeStart(before, after, info.Uptime), nil
}

// drop closes a pod's session after a failure, so that the next call opens
// a fresh one.
func (s *sessions) drop(uid types.UID) {
	s.mu.Lock()
	sess, ok := s.open[uid]
	delete(s.open, uid)
	s.mu.Unlock()
	if ok {
		_ = sess.Close()
	}
}

// close closes every session.
func (s *sessions) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, sess := range s.open {
		_ = sess.Close()
		delete(s.open, uid)
	}
}

// ensureFinalizer adds the finalizer; the object is updated in place.
func (e *env) ensureFinalizer(ctx context.Context, obj client.Object) error {
	if controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, v1alpha1.Finalizer)
	if err := e.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	return nil
}

// removeFinalizer lets the object go.
func (e *env) removeFinalizer(ctx context.Context, obj client.Object) error {
	if !controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, v1alpha1.Finalizer)
	if err := e.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// patchStatus writes obj's status over base's, failing if someone else
// wrote the object since it was read (the record of what was done must
// never be overwritten by an older copy). Nothing is sent when the status
// did not change. obj gets the new resource version; the caller takes a
// new base from it for the next write.
func (e *env) patchStatus(ctx context.Context, kind string, obj, base client.Object) error {
	if equality.Semantic.DeepEqual(obj, base) {
		return nil
	}
	e.opts.Metrics.statusWrites.WithLabelValues(kind).Inc()
	if err := e.client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
