package localratelimit

import (
	"container/list"
	"encoding/binary"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tokenbucket"
)

// defaultMaxDynamic is Envoy's max_dynamic_descriptors when unset.
const defaultMaxDynamic = 20

// dynamicLimit is a wildcard descriptor (one with entries whose value is
// empty), as Envoy's DynamicDescriptor: a request descriptor of the same
// keys, whatever its values there, gets a bucket of its own, made full the
// first time its values are seen. The buckets of the size most recently
// used value tuples are kept (max_dynamic_descriptors); the least recently
// used one is forgotten when another comes, so a client that sends ever
// new values costs a bounded memory, and a forgotten tuple starts again
// with a full bucket.
type dynamicLimit struct {
	entries []router.DescriptorEntry
	spec    tokenbucket.Spec
	size    int
	shadow  bool // the descriptor's shadow_mode

	mu sync.Mutex
	// byKey finds a tuple's element of lru (front: the most recently
	// used), whose value is a *dynamicBucket.
	byKey map[string]*list.Element
	lru   list.List
	// key is scratch space for a tuple's key, under mu.
	key []byte
}

// dynamicBucket is one value tuple's bucket; nil when the descriptor's
// max_tokens is 0, which denies.
type dynamicBucket struct {
	key    string
	bucket *tokenbucket.Bucket
}

// newDynamicLimit makes the wildcard descriptor d, keeping size tuples.
func newDynamicLimit(d descriptorSpec, size int) *dynamicLimit {
	return &dynamicLimit{entries: d.entries, spec: d.bucket, size: size, shadow: d.shadow, byKey: make(map[string]*list.Element)}
}

// matches reports whether a request descriptor has the wildcard's keys,
// in order, and its values where the wildcard has one, as Envoy's
// matchDescriptorEntries.
func (d *dynamicLimit) matches(rd []router.DescriptorEntry) bool {
	if len(rd) != len(d.entries) {
		return false
	}
	for i, e := range d.entries {
		if rd[i].Key != e.Key || (e.Value != "" && rd[i].Value != e.Value) {
			return false
		}
	}
	return true
}

// bucket returns the bucket of a matching request descriptor's values at
// now, making it (and forgetting the least recently used one beyond the
// size) the first time.
func (d *dynamicLimit) bucket(rd []router.DescriptorEntry, now float64) *tokenbucket.Bucket {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The key is the values of the request's entries (their keys are
	// the wildcard's), each after its length, so that no two tuples
	// share one.
	d.key = d.key[:0]
	for _, e := range rd {
		d.key = binary.AppendUvarint(d.key, uint64(len(e.Value)))
		d.key = append(d.key, e.Value...)
	}
	if el, ok := d.byKey[string(d.key)]; ok {
		d.lru.MoveToFront(el)
		return el.Value.(*dynamicBucket).bucket
	}
	db := &dynamicBucket{key: string(d.key)}
	if d.spec.MaxTokens > 0 {
		db.bucket = tokenbucket.New(d.spec, now)
	}
	d.byKey[db.key] = d.lru.PushFront(db)
	if d.lru.Len() > d.size {
		last := d.lru.Back()
		d.lru.Remove(last)
		delete(d.byKey, last.Value.(*dynamicBucket).key)
	}
	return db.bucket
}

// len is how many tuples the wildcard keeps now.
func (d *dynamicLimit) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Len()
}
