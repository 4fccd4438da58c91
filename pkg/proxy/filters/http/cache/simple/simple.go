// Package simple is the simple in-memory HTTP cache
// (envoy.extensions.http.cache.simple), the storage of the cache filter.
// As Envoy's, one cache serves every cache filter of the server that names
// it, and survives configuration updates. Unlike Envoy's, which grows
// without bound, it holds at most MaxBytes: the least recently used
// entries are evicted to make room, and counted in
// cache.simple.evictions.
package simple

import (
	"container/list"
	"errors"
	"sync"

	simplev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/cache/simple_http_cache/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/cache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.extensions.http.cache.simple"

// MaxBytes bounds the memory of the cache: the entries' bodies and heads.
const MaxBytes = 64 << 20

// evictionsStat counts the entries evicted to respect MaxBytes.
const evictionsStat = "cache.simple.evictions"

// Factory makes the server's one simple cache, on first use. It is made
// per registry (NewFactory), so that each server has its own.
type Factory struct {
	mu    sync.Mutex
	store *Store
}

var _ cache.StoreFactory = (*Factory)(nil)

// NewFactory returns a factory whose cache holds up to MaxBytes.
func NewFactory() *Factory { return &Factory{} }

// NewStore implements cache.StoreFactory: SimpleHttpCacheConfig has no
// field; every filter gets the same cache.
func (f *Factory) NewStore(config proto.Message, ctx httpfilter.Context) (cache.Store, error) {
	if _, ok := config.(*simplev3.SimpleHttpCacheConfig); !ok {
		return nil, errors.New("not a SimpleHttpCacheConfig configuration")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store == nil {
		f.store = New(MaxBytes)
	}
	if f.store.evictions == nil && ctx.Stats != nil {
		f.store.setEvictions(ctx.Stats.Counter(evictionsStat))
	}
	return f.store, nil
}

// Store is an in-memory cache of at most max bytes, least recently used
// entries evicted first.
type Store struct {
	max int

	mu        sync.Mutex
	size      int
	byKey     map[string]*list.Element
	lru       list.List // of *item, most recently used first
	evictions *stats.Counter
}

// item is one stored entry.
type item struct {
	key   string
	entry *cache.Entry
	size  int
}

// New returns an empty store of at most max bytes.
func New(max int) *Store {
	return &Store{max: max, byKey: map[string]*list.Element{}}
}

func (s *Store) setEvictions(c *stats.Counter) {
	s.mu.Lock()
	s.evictions = c
	s.mu.Unlock()
}

var _ cache.Store = (*Store)(nil)

// Get implements cache.Store.
func (s *Store) Get(key string) (*cache.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byKey[key]
	if !ok {
		return nil, false
	}
	s.lru.MoveToFront(el)
	return el.Value.(*item).entry, true
}

// Put implements cache.Store: an entry larger than the whole cache is
// not stored (and what was under its key goes).
func (s *Store) Put(key string, e *cache.Entry) {
	size := e.Size() + len(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byKey[key]; ok {
		s.remove(el)
	}
	if size > s.max {
		return
	}
	for s.size+size > s.max {
		s.remove(s.lru.Back())
		if s.evictions != nil {
			s.evictions.Inc()
		}
	}
	s.byKey[key] = s.lru.PushFront(&item{key: key, entry: e, size: size})
	s.size += size
}

// remove drops an element; s.mu is held.
func (s *Store) remove(el *list.Element) {
	it := s.lru.Remove(el).(*item)
	delete(s.byKey, it.key)
	s.size -= it.size
}

// Limit implements cache.Store.
func (s *Store) Limit() int { return s.max }

// Len is the number of entries stored.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}
