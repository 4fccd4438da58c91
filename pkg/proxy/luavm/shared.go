package luavm

import "sync"

// SharedKey names a set of Lua states that several configurations share
// (the Lua filter's shared_vm_id): the states of one script, under one
// id, with one package path. Envoy decides sharing per script, so two
// configurations with the same id share the states of the scripts whose
// code and paths are the same, and keep their own for the others.
type SharedKey struct {
	// Kind is the extension the states serve: states made for one kind
	// carry that kind's objects and are never handed to another.
	Kind string
	// ID is the configurations' shared_vm_id.
	ID string
	// Code is the script's text; Paths its package_paths, joined.
	Code, Paths string
}

// Registry is the server's shared Lua states, counted by reference: a
// configuration acquires the states of its key, making them when no live
// configuration holds them, and releases them when it is closed; the last
// release forgets them, so that a later configuration with that key
// starts with fresh states (fresh globals), as Envoy tears down a shared
// VM once the last configuration using it is drained. The zero value is
// ready to use. It lives as long as the server, which owns it; the states
// themselves live only while a configuration holds them, so that
// configurations replaced over xDS do not leave states behind.
type Registry struct {
	mu      sync.Mutex
	entries map[SharedKey]*sharedEntry
}

// sharedEntry is one key's states and the count of configurations that
// hold them.
type sharedEntry struct {
	value any
	close func()
	refs  int
}

// Acquire returns the states of k, which open makes (with the function
// that closes them) when no configuration holds them, and the function
// that releases this configuration's hold; it may be called more than
// once. open's error is returned as it is and nothing is kept.
func (r *Registry) Acquire(k SharedKey, open func() (any, func(), error)) (any, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[k]
	if e == nil {
		// open runs under the lock: two configurations compiled at
		// once with one key must not make two sets of states.
		v, closeFn, err := open()
		if err != nil {
			return nil, nil, err
		}
		e = &sharedEntry{value: v, close: closeFn}
		if r.entries == nil {
			r.entries = map[SharedKey]*sharedEntry{}
		}
		r.entries[k] = e
	}
	e.refs++
	var once sync.Once
	return e.value, func() { once.Do(func() { r.release(k, e) }) }, nil
}

// release drops one hold on e; the last forgets and closes it.
func (r *Registry) release(k SharedKey, e *sharedEntry) {
	r.mu.Lock()
	e.refs--
	last := e.refs == 0
	if last && r.entries[k] == e {
		delete(r.entries, k)
	}
	r.mu.Unlock()
	if last && e.close != nil {
		e.close()
	}
}

// Len is how many sets of shared states live configurations hold.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}
