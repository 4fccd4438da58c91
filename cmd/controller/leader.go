package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// inClusterNamespace is where a pod finds its own namespace.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaseNamespace is --leader-election-namespace, else the controller's own
// namespace in a cluster.
func leaseNamespace(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	b, err := os.ReadFile(inClusterNamespace)
	if err != nil {
		return "", errors.New("--leader-election-namespace: required outside a cluster (" + inClusterNamespace + " cannot be read)")
	}
	ns := strings.TrimSpace(string(b))
	if ns == "" {
		return "", errors.New("--leader-election-namespace: required (" + inClusterNamespace + " is empty)")
	}
	return ns, nil
}

// leaseIdentity is --leader-election-identity, else the host name (a pod's
// name in a cluster): an identity that survives a restart, so that a
// restarted replica finds the lease held by itself and takes it back at
// once instead of waiting for it to expire.
func leaseIdentity(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "", fmt.Errorf("--leader-election-identity: no host name to default to (%v); set it", err)
	}
	return host, nil
}

// leader runs the reconcilers while this replica holds the lease, and
// campaigns again when it loses it: the process does not exit.
//
// Losing the lease without meaning to means the API server could not be
// reached for --leader-election-renew-deadline. The reconcilers then stop
// (another replica may take the lease once it expires), in-flight work is
// waited for, and the replica campaigns again; with its stable identity it
// takes its own lease back as soon as the API server answers, unless
// another replica took it meanwhile. A fresh manager is built for each
// term, so that nothing of the last one (caches, queues, backoffs)
// carries over. The webhook, metrics and health endpoints are served by
// the outer manager throughout.
type leader struct {
	config *rest.Config
	// namespace, name and identity of the Lease.
	namespace, name, identity string
	lease, renew, retry       time.Duration
	// lead builds a manager with the reconcilers and runs it until ctx
	// ends.
	lead func(ctx context.Context) error
	// stopTimeout bounds the wait for the reconcilers to stop after the
	// lease is lost; past it the process exits (an error), the only way
	// left to make sure they do.
	stopTimeout time.Duration
	acquired    func()
	lost        func()
	log         logr.Logger
}

// Start campaigns and leads, again and again, until ctx ends.
func (l *leader) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		led, err := l.term(ctx)
		if err != nil {
			return err
		}
		if led && ctx.Err() == nil {
			l.lost()
			l.log.Info("lost the leader lease (the API server did not answer in time); the reconcilers stopped; campaigning again",
				"lease", l.namespace+"/"+l.name, "identity", l.identity)
		}
	}
	return nil
}

// NeedLeaderElection: the loop runs on every replica (it is the election).
func (l *leader) NeedLeaderElection() bool { return false }

// term campaigns for the lease, then leads until the lease is lost or ctx
// ends. led says whether it led at all.
func (l *leader) term(ctx context.Context) (led bool, err error) {
	lock, err := l.lock()
	if err != nil {
		return false, err
	}
	// The election gets a context of its own: on shutdown the reconcilers
	// stop first, and only then is the lease released.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()

	var (
		mu       sync.Mutex
		leading  bool
		stopping bool
		workErr  error
		workDone = make(chan struct{})
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: l.lease,
		RenewDeadline: l.renew,
		RetryPeriod:   l.retry,
		Name:          l.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(workDone)
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				leading = true
				mu.Unlock()
				l.acquired()
				l.log.Info("leading", "lease", l.namespace+"/"+l.name, "identity", l.identity)
				// The reconcilers stop when the lease is lost (lctx) or
				// on shutdown (ctx).
				work, stop := context.WithCancel(lctx)
				defer stop()
				unhook := context.AfterFunc(ctx, stop)
				defer unhook()
				workErr = l.lead(work)
				// Nothing runs any more: the lease may go.
				stopElection()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return false, fmt.Errorf("leader election: %w", err)
	}
	// Shutdown before leading stops the campaign.
	unhook := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			stopping = true
			stopElection()
		}
	})
	defer unhook()

	elector.Run(electCtx)
	mu.Lock()
	led = leading
	mu.Unlock()
	if !led {
		return false, nil
	}
	select {
	case <-workDone:
	case <-time.After(l.stopTimeout):
		return true, fmt.Errorf("the reconcilers did not stop within %s of losing the leader lease; exiting so that no two replicas act at once", l.stopTimeout)
	}
	// Released only now that nothing runs: client-go's ReleaseOnCancel
	// would release it before the work is told to stop. A lease lost
	// stays with whoever holds it.
	if ctx.Err() != nil || workErr != nil {
		l.release(lock)
	}
	if workErr != nil {
		return true, fmt.Errorf("manager: %w", workErr)
	}
	return true, nil
}

// release gives the lease up, if this replica still holds it, so that
// another replica (or this one, restarted) takes it at once rather than
// after it expires.
func (l *leader) release(lock resourcelock.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), l.renew)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		l.log.Error(err, "could not release the leader lease; the other replicas wait for it to expire", "lease", l.namespace+"/"+l.name)
		return
	}
	if rec.HolderIdentity != l.identity {
		return
	}
	now := metav1.NewTime(time.Now())
	err = lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	})
	if err != nil {
		l.log.Error(err, "could not release the leader lease; the other replicas wait for it to expire", "lease", l.namespace+"/"+l.name)
		return
	}
	l.log.Info("released the leader lease", "lease", l.namespace+"/"+l.name, "identity", l.identity)
}

// lock is a new Lease lock; its client gives up on a request after half
// the renew deadline, so that one hung request cannot cost the lease.
func (l *leader) lock() (resourcelock.Interface, error) {
	cfg := rest.CopyConfig(l.config)
	cfg = rest.AddUserAgent(cfg, "leader-election")
	cfg.Timeout = max(l.renew/2, time.Second)
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, l.namespace, l.name, core, coordination,
		resourcelock.ResourceLockConfig{Identity: l.identity})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return lock, nil
}
