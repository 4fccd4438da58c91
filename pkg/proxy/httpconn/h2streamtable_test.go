package httpconn

import (
	"math/rand/v2"
	"testing"
)

// TestH2StreamTable drives the table and a map with the same random
// opening (increasing odd identifiers, as a client's), closing in any
// order and replacing, and compares them after each step, including what
// all yields and removing streams while iterating.
func TestH2StreamTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var tab h2StreamTable
		model := map[uint32]*h2Stream{}
		next := uint32(1)
		for step := range 400 {
			switch op := r.IntN(10); {
			case op < 5 && len(model) < 40:
				st := &h2Stream{id: next}
				next += 2
				tab.put(st)
				model[st.id] = st
			case op < 8 && len(model) > 0:
				// Close a random open stream (the oldest ones linger).
				for id := range model {
					tab.remove(id)
					delete(model, id)
					break
				}
			case op < 9 && len(model) > 0:
				for id := range model {
					st := &h2Stream{id: id}
					tab.put(st)
					model[id] = st
					break
				}
			default:
				// Ids never opened or already closed.
				tab.remove(next + 2)
				if tab.get(next) != nil || tab.get(next+2) != nil {
					t.Fatalf("round %d step %d: a stream not opened is found", round, step)
				}
			}
			if tab.len() != len(model) {
				t.Fatalf("round %d step %d: len %d, want %d", round, step, tab.len(), len(model))
			}
			for id, st := range model {
				if got := tab.get(id); got != st {
					t.Fatalf("round %d step %d: get(%d) = %p, want %p", round, step, id, got, st)
				}
			}
			seen := map[uint32]bool{}
			for st := range tab.all() {
				if model[st.id] != st || seen[st.id] {
					t.Fatalf("round %d step %d: all yields %d wrongly or twice", round, step, st.id)
				}
				seen[st.id] = true
			}
			if len(seen) != len(model) {
				t.Fatalf("round %d step %d: all yields %d streams, want %d", round, step, len(seen), len(model))
			}
		}
		// Removing every stream while iterating empties the table.
		for st := range tab.all() {
			tab.remove(st.id)
		}
		if tab.len() != 0 {
			t.Fatalf("round %d: %d streams left after removing all while iterating", round, tab.len())
		}
		for id := range model {
			if tab.get(id) != nil {
				t.Fatalf("round %d: %d still found", round, id)
			}
		}
	}
}
