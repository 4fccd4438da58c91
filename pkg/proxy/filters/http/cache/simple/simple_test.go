package simple

import (
	"strings"
	"testing"

	simplev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/cache/simple_http_cache/v3"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/cache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func entry(body string) *cache.Entry {
	return &cache.Entry{Status: 200, Body: []byte(body)}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	one := entry(strings.Repeat("x", 100))
	size := one.Size() + len("a")
	s := New(3 * size)
	st := stats.NewStore()
	s.setEvictions(st.Counter(evictionsStat))
	s.Put("a", one)
	s.Put("b", entry(strings.Repeat("y", 100)))
	s.Put("c", entry(strings.Repeat("z", 100)))
	if _, ok := s.Get("a"); !ok {
		t.Fatal("a is gone before the cache is full")
	}
	// "b" is now the least recently used.
	s.Put("d", entry(strings.Repeat("w", 100)))
	if _, ok := s.Get("b"); ok {
		t.Error("b was not evicted")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := s.Get(k); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	if got := st.Counter(evictionsStat).Value(); got != 1 {
		t.Errorf("evictions %d", got)
	}
	// Replacing an entry frees its room first.
	s.Put("a", entry(strings.Repeat("v", 100)))
	if s.Len() != 3 || st.Counter(evictionsStat).Value() != 1 {
		t.Errorf("len %d, evictions %d", s.Len(), st.Counter(evictionsStat).Value())
	}
	// An entry larger than the cache is not stored, and what its key
	// held goes.
	s.Put("a", entry(strings.Repeat("v", 4*size)))
	if _, ok := s.Get("a"); ok || s.Len() != 2 {
		t.Errorf("an oversized entry: len %d", s.Len())
	}
}

func TestFactorySharesOneStore(t *testing.T) {
	f := NewFactory()
	st := stats.NewStore()
	a, err := f.NewStore(&simplev3.SimpleHttpCacheConfig{}, httpfilter.Context{Stats: st})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.NewStore(&simplev3.SimpleHttpCacheConfig{}, httpfilter.Context{})
	if a != b {
		t.Error("two filters got two caches")
	}
	if a.Limit() != MaxBytes {
		t.Errorf("limit %d", a.Limit())
	}
	if _, err := f.NewStore(&emptypb.Empty{}, httpfilter.Context{}); err == nil {
		t.Error("a foreign config was accepted")
	}
}
