package stats

import "sync/atomic"

// slabChunkBits sets the chunk size of a slab: 256 elements, so a small
// store costs a few kilobytes while a million stats need only 4096 chunks.
const (
	slabChunkBits = 8
	slabChunkSize = 1 << slabChunkBits
)

// slab is an append-only table of T whose elements never move. Elements are
// allocated in fixed chunks, so the pointer a component keeps stays valid and
// a million stats cost no per-object allocation header. New elements are
// added under the store's lock; readers index without the lock once the index
// has been published to them (through a child list or the child index),
// because the chunk directory is replaced, never mutated below its length.
type slab[T any] struct {
	dir atomic.Pointer[[]*[slabChunkSize]T]
	n   uint32 // guarded by Store.mu
}

// at returns element i, which must have been published to the caller.
func (s *slab[T]) at(i uint32) *T {
	d := *s.dir.Load()
	return &d[i>>slabChunkBits][i&(slabChunkSize-1)]
}

// alloc returns a fresh zero element and its index. The caller holds Store.mu.
func (s *slab[T]) alloc() (uint32, *T) {
	i := s.n
	var d []*[slabChunkSize]T
	if p := s.dir.Load(); p != nil {
		d = *p
	}
	if int(i>>slabChunkBits) == len(d) {
		// Writing past the old length never touches what a reader holding
		// the old directory can see, so appending in place is safe. The
		// published header is a variable of this branch alone: were it d,
		// whose address would then escape, every call would allocate one.
		grown := append(d, new([slabChunkSize]T))
		s.dir.Store(&grown)
		d = grown
	}
	s.n++
	return i, &d[i>>slabChunkBits][i&(slabChunkSize-1)]
}

// len returns the number of elements; the caller holds Store.mu.
func (s *slab[T]) len() uint32 { return s.n }
