package dnscache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	dfpcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/dynamic_forward_proxy/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/keyvalue/filebased"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Options are what a Manager builds caches with.
type Options struct {
	// Stats is the server's stat store (required).
	Stats *stats.Store
	// Resolver builds the resolver of the caches without one of their
	// own: the server's (the bootstrap's typed_dns_resolver_config).
	Resolver func() dns.Resolver
	// ServerUntyped is set when the bootstrap has no
	// typed_dns_resolver_config with a typed_config: a cache without
	// resolver settings then builds c-ares of its own with its
	// use_tcp_for_dns_lookups (Config.Legacy) rather than the server's
	// resolver, as Envoy's DNS cache chooses.
	ServerUntyped bool
	// Env is what the caches' own resolvers are built with.
	Env dns.Env
	// Log is the "forward_proxy" component logger.
	Log logr.Logger
	// Extensions are the DNS resolver extensions a cache's
	// typed_dns_resolver_config may name.
	Extensions *extension.Registry
	// Runtime returns the runtime's current snapshot (nil: no runtime),
	// whose key dns_cache.<name>.circuit_breakers overrides a cache's
	// max_pending_requests.
	Runtime func() *runtime.Snapshot
	// Now is the clock (nil: time.Now); Rand draws the back-off's jitter.
	Now  func() time.Time
	Rand func() uint64
}

// Manager shares the caches by name, as Envoy's DNS cache manager: the
// filters and clusters that name a cache use one Cache, and must give it
// the same settings. It is a value of the server, never package state.
type Manager struct {
	o       Options
	mu      sync.Mutex
	caches  map[string]*Cache
	started bool
}

// NewManager returns a manager without caches.
func NewManager(o Options) *Manager {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Rand == nil {
		o.Rand = rand.Uint64
	}
	return &Manager{o: o, caches: map[string]*Cache{}}
}

// Get returns the cache cfg names, made the first time. A cache of that
// name with other settings is an error, in Envoy's words.
func (m *Manager) Get(cfg *Config) (*Cache, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.caches[cfg.Name]; c != nil {
		if !c.cfg.sameAs(cfg) {
			return nil, fmt.Errorf("config specified DNS cache '%s' with different settings", cfg.Name)
		}
		return c, nil
	}
	var r dns.Resolver
	switch {
	case cfg.Resolver != nil:
		r = cfg.Resolver.New(m.o.Env)
	case m.o.ServerUntyped && cfg.Legacy != nil:
		r = cfg.Legacy.New(m.o.Env)
	default:
		r = m.o.Resolver()
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &Cache{
		cfg:      cfg,
		resolver: r,
		st:       newCacheStats(m.o.Stats, cfg.Name, cfg.MaxPending),
		rt:       m.o.Runtime,
		// Envoy's key, the breakers' stat prefix without a limit's name:
		// the cache has only the one limit.
		pendingKey: "dns_cache." + cfg.Name + ".circuit_breakers",
		log:        m.o.Log,
		now:        m.o.Now,
		rand:       m.o.Rand,
		ctx:        ctx,
		stop:       stop,
		hosts:      map[string]*Host{},
	}
	if cfg.KeyValue != nil {
		c.kv = filebased.Open(cfg.KeyValue, m.o.Log, nil)
		c.loadStored()
	}
	m.caches[cfg.Name] = c
	if m.started {
		c.start()
	}
	return c, nil
}

// ForConfig compiles a DnsCacheConfig and returns its cache (see Get).
// Errors name the field path below the DnsCacheConfig.
func (m *Manager) ForConfig(c *dfpcommonv3.DnsCacheConfig) (*Cache, error) {
	cfg, errs := Compile(c, m.o.Extensions)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cache, err := m.Get(cfg)
	if err != nil {
		return nil, fieldpath.Errorf("name", "%v", err)
	}
	return cache, nil
}

// Start lets the caches resolve: preresolve_hostnames first, then the
// names loaded before. Caches made later start at once.
func (m *Manager) Start() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = true
	for _, c := range m.caches {
		c.start()
	}
}

// Close stops every cache's resolutions and refreshes.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.caches {
		c.close()
	}
}
