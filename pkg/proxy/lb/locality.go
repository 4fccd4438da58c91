package lb

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// localityGroup is one locality of a priority level: its hosts, healthy
// hosts and degraded hosts, in the level's order, and the weight
// locality-weighted balancing gives it.
type localityGroup struct {
	locality                upstream.Locality
	all, healthy, degraded  []*upstream.Host
	weight                  uint32
	healthyPick, degrPicker Picker // nil when the list is empty or no one picks by locality
	// excluded counts the hosts of all that Envoy leaves out of the
	// locality's availability (upstream.Host.Excluded).
	excluded int
}

// localities is how a level's hosts spread over localities, in Envoy's
// order: the proxy's own locality first when the level has hosts there,
// then the others sorted by region, zone and sub-zone.
type localities struct {
	groups []localityGroup
	// hasLocal reports that groups[0] is the proxy's own locality.
	hasLocal bool
}

// groupLocalities splits hosts by locality. local is the proxy's
// locality, nil when unknown. order, when not nil, fixes the localities
// and their order (a subset keeps the localities of the level it is cut
// from, empty ones included, so that indexes and the local locality stay
// as they were); hosts of other localities are then left out.
func groupLocalities(hosts []*upstream.Host, local *upstream.Locality, order *localities) localities {
	var ls localities
	index := map[upstream.Locality]int{}
	if order != nil {
		ls.hasLocal = order.hasLocal
		ls.groups = make([]localityGroup, len(order.groups))
		for i, g := range order.groups {
			ls.groups[i].locality = g.locality
			index[g.locality] = i
		}
	} else {
		var locs []upstream.Locality
		for _, h := range hosts {
			if _, seen := index[h.Locality]; !seen {
				index[h.Locality] = 0
				locs = append(locs, h.Locality)
			}
		}
		slices.SortFunc(locs, compareLocality)
		if local != nil {
			if i := slices.Index(locs, *local); i >= 0 {
				// The local locality moves to the front; the others keep
				// their sorted order.
				copy(locs[1:i+1], locs[:i])
				locs[0] = *local
				ls.hasLocal = true
			}
		}
		ls.groups = make([]localityGroup, len(locs))
		for i, l := range locs {
			ls.groups[i].locality = l
			index[l] = i
		}
	}
	for _, h := range hosts {
		i, ok := index[h.Locality]
		if !ok {
			continue
		}
		g := &ls.groups[i]
		g.all = append(g.all, h)
		switch {
		case !h.Healthy():
			if h.Excluded() {
				g.excluded++
			}
		case h.Degraded():
			g.degraded = append(g.degraded, h)
		default:
			g.healthy = append(g.healthy, h)
		}
	}
	return ls
}

// compareLocality orders localities by region, then zone, then sub-zone,
// as Envoy's LocalityLess.
func compareLocality(a, b upstream.Locality) int {
	if c := cmp.Compare(a.Region, b.Region); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Zone, b.Zone); c != 0 {
		return c
	}
	return cmp.Compare(a.SubZone, b.SubZone)
}

// buildPickers gives every locality a picker for its healthy hosts and
// one for its degraded hosts (nil for an empty list).
func (ls *localities) buildPickers(f PickerFactory, seed uint64) {
	for i := range ls.groups {
		g := &ls.groups[i]
		g.healthyPick = newPicker(f, g.healthy, seed)
		g.degrPicker = newPicker(f, g.degraded, seed)
	}
}

// effectiveWeight is Envoy's effective locality weight: the locality's
// weight scaled by its availability, the share of its hosts that are
// eligible (healthy, or degraded for the degraded schedule) times the
// overprovisioning factor, capped at 1.
func effectiveWeight(weight uint32, eligible, total int, overprovisioning uint32) float64 {
	if total == 0 {
		return 0
	}
	ratio := float64(eligible) / float64(total)
	return float64(weight) * math.Min(1, float64(overprovisioning)/100*ratio)
}

// newLocalitySchedule builds the weighted round robin over the localities
// of a level for one host source (healthy or degraded hosts): nil when no
// locality has a positive effective weight, in which case the level is
// balanced as if locality weighting were off, as Envoy does.
func newLocalitySchedule(ls *localities, degraded bool, overprovisioning uint32, seed uint64) *localityEDF {
	var entries []localityEntry
	for i := range ls.groups {
		g := &ls.groups[i]
		eligible := len(g.healthy)
		if degraded {
			eligible = len(g.degraded)
		}
		if w := effectiveWeight(g.weight, eligible, len(g.all)-g.excluded, overprovisioning); w > 0 {
			entries = append(entries, localityEntry{index: i, step: 1 / w})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return newLocalityEDF(entries, seed)
}

// localityEDF is the earliest-deadline-first schedule of localities, with
// the float weights of effective locality weights: each locality is due
// 1/weight after its last pick, ties going to the one queued first.
type localityEDF struct {
	mu    sync.Mutex
	order uint64
	heap  []localityEntry
}

// localityEntry is one locality waiting in the schedule.
type localityEntry struct {
	deadline float64
	order    uint64
	step     float64
	index    int
}

func newLocalityEDF(entries []localityEntry, seed uint64) *localityEDF {
	e := &localityEDF{heap: make([]localityEntry, 0, len(entries))}
	for _, en := range entries {
		en.deadline = en.step
		en.order = e.order
		e.order++
		e.heap = append(e.heap, en)
		e.up(len(e.heap) - 1)
	}
	// A seed-chosen start, as Envoy's pre-picks give one.
	for range seed % uint64(len(entries)) {
		e.pick()
	}
	return e
}

// pick returns the index of the locality due first and queues it again.
func (e *localityEDF) pick() int {
	e.mu.Lock()
	top := &e.heap[0]
	i := top.index
	top.deadline += top.step
	top.order = e.order
	e.order++
	e.down(0)
	e.mu.Unlock()
	return i
}

func (e *localityEDF) less(i, j int) bool {
	a, b := &e.heap[i], &e.heap[j]
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.order < b.order
}

func (e *localityEDF) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !e.less(i, parent) {
			return
		}
		e.heap[i], e.heap[parent] = e.heap[parent], e.heap[i]
		i = parent
	}
}

func (e *localityEDF) down(i int) {
	n := len(e.heap)
	for {
		smallest := i
		if l := 2*i + 1; l < n && e.less(l, smallest) {
			smallest = l
		}
		if r := 2*i + 2; r < n && e.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			return
		}
		e.heap[i], e.heap[smallest] = e.heap[smallest], e.heap[i]
		i = smallest
	}
}
