package stats

// Kind is the type of a stat.
type Kind uint8

// The stat kinds. The zero Kind marks an interior node of the name tree and
// never reaches callers.
const (
	KindCounter Kind = iota + 1
	KindGauge
	KindTextReadout
	KindHistogram
)

// String returns the kind's name as Envoy's admin spells it.
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindTextReadout:
		return "text_readout"
	case KindHistogram:
		return "histogram"
	}
	return "unknown"
}

// kindPrefix marks an interior node (a name prefix) in a child entry.
const kindPrefix Kind = 0

// A child entry of the name tree packs the kind in its top three bits and
// the index into that kind's slab in the rest, so a child costs four bytes.
const (
	entryKindShift = 29
	entryIndexMask = 1<<entryKindShift - 1
	// maxSegments bounds segment ids, which share a word with the used bit
	// and the kind in the lookup key.
	maxSegments = entryIndexMask
)

func makeEntry(k Kind, idx uint32) uint32 { return uint32(k)<<entryKindShift | idx }

func entryKind(e uint32) Kind { return Kind(e >> entryKindShift) }

func entryIndex(e uint32) uint32 { return e & entryIndexMask }

// nameKey finds a child of a tree node: the parent node and the child's
// segment with the child's kind in the top bits, so a counter and a gauge
// of the same name, or a stat and a prefix of the same segment, are distinct.
type nameKey [2]uint32

func makeKey(parent, seg uint32, k Kind) nameKey {
	return nameKey{parent, seg | uint32(k)<<entryKindShift}
}

// statMeta is the word every stat keeps for its name: the segment id of its
// last name segment, plus the used flag in the top bit, updated atomically
// so the hot path can set it without a separate field.
const (
	usedBit  = 1 << 31
	metaMask = entryIndexMask
)
