package stats

import "unsafe"

// segmentCache remembers the ids of recently interned segments by where
// the caller's string lies in memory. A stat's last segment is nearly
// always a constant of the code making it ("upstream_rq_total"), the same
// bytes for every cluster, so the cache answers without hashing the text in
// the segIDs map, which was about a tenth of making a stat. A hit is only
// trusted once the text matches the interned segment: a string's memory can
// be reused, or be a view of a buffer that changed, so the address alone
// proves nothing. Guarded by Store.mu.
type segmentCache struct {
	slots [segmentCacheSize]segmentSlot
}

// segmentSlot is one cached segment: its caller's data address and length,
// and its id.
type segmentSlot struct {
	data uintptr
	n    int
	id   uint32
}

// segmentCacheSize is a power of two: a cluster makes about a hundred
// stats, each with its own constant name, and a few scopes' worth fit.
const segmentCacheSize = 1024

// slot returns the cache slot for seg's address and length.
func (c *segmentCache) slot(seg string) (*segmentSlot, uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.StringData(seg)))
	h := (p>>3 ^ p>>13 ^ uintptr(len(seg))) & (segmentCacheSize - 1)
	return &c.slots[h], p
}

// cachedSegment returns the id of seg when the cache holds it. The caller
// holds s.mu.
func (s *Store) cachedSegment(seg string) (uint32, bool) {
	if seg == "" {
		return 0, false
	}
	sl, p := s.segCache.slot(seg)
	if sl.data != p || sl.n != len(seg) {
		return 0, false
	}
	// Compare the text: the interned copy lies elsewhere, so this is a
	// real comparison of a few bytes, far cheaper than a map access.
	if s.segment(sl.id) != seg {
		return 0, false
	}
	return sl.id, true
}

// cacheSegment remembers that seg, at its current address, is segment id.
// The caller holds s.mu.
func (s *Store) cacheSegment(seg string, id uint32) {
	if seg == "" {
		return
	}
	sl, p := s.segCache.slot(seg)
	*sl = segmentSlot{data: p, n: len(seg), id: id}
}
