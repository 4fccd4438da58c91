package server

import (
	"slices"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// initTarget is one thing a listener waits for before it serves, named as
// Envoy names its init targets ("RdsRouteConfigSubscription init <name>",
// "SdsApi <secret>").
type initTarget struct {
	name  string
	ready <-chan struct{}
	// start, when set, is called when the listener starts warming (its
	// clusters initialised), as Envoy's init manager initializes its
	// targets then; it may be called more than once.
	start func()
}

// listenerWarming is what a listener waits for before it serves (the
// first configuration of each of its RDS names, the first value of each
// secret its TLS contexts take from discovery), and what it gives back
// when it closes.
type listenerWarming struct {
	mu      sync.Mutex
	targets []initTarget
	release []func()
}

// add adds a target, once per name.
func (w *listenerWarming) add(t initTarget) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.ContainsFunc(w.targets, func(o initTarget) bool { return o.name == t.name }) {
		w.targets = append(w.targets, t)
	}
}

// addSecret makes the listener wait for a secret's first value (or its
// initial fetch timeout), as Envoy's listener init manager waits for its
// SdsApi targets.
func (w *listenerWarming) addSecret(p *tlsconfig.Provider) {
	w.add(initTarget{name: "SdsApi " + p.Name(), ready: p.Ready()})
}

// snapshot is the targets now.
func (w *listenerWarming) snapshot() []initTarget {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.targets)
}

// ready is closed once every target is ready.
func (w *listenerWarming) ready() <-chan struct{} {
	done := make(chan struct{})
	if w == nil {
		close(done)
		return done
	}
	targets := w.snapshot()
	for _, t := range targets {
		if t.start != nil {
			t.start()
		}
	}
	go func() {
		defer close(done)
		for _, t := range targets {
			<-t.ready
		}
	}()
	return done
}

// unready returns the names of the targets not ready yet.
func (w *listenerWarming) unready() []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, t := range w.snapshot() {
		select {
		case <-t.ready:
		default:
			out = append(out, t.name)
		}
	}
	return out
}

// close gives the listener's managers up.
func (w *listenerWarming) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	release := w.release
	w.release = nil
	w.mu.Unlock()
	for _, f := range release {
		f()
	}
}
