package hpack

import "testing"

// TestGeneration checks that the table's generation changes with every
// change of the dynamic table or of the decoder's limits, and only then:
// a caller that reuses a block's decoding at the same generation (the
// HTTP/2 server's request block memo) relies on both.
func TestGeneration(t *testing.T) {
	c := newCollector(4096)
	d := c.d
	steps := []struct {
		name    string
		block   string // hex
		changes bool
	}{
		// RFC 7541 C.3.1: :method GET, :scheme http, :path / indexed,
		// then :authority www.example.com with incremental indexing.
		{"literal with incremental indexing", "828684410f7777772e6578616d706c652e636f6d", true},
		{"indexed static fields", "828684", false},
		{"indexed dynamic field", "be", false},
		{"literal without indexing", "040c2f73616d706c652f70617468", false},
		{"literal never indexed", "100870617373776f726406736563726574", false},
		{"literal with indexing of a static name", "4e0161", true},
		{"dynamic table size update", "3fe11f", true},
		{"size update to the same size", "3fe11f", true},
	}
	for _, s := range steps {
		before := d.Generation()
		if _, err := c.block(unhex(t, s.block), 0); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if changed := d.Generation() != before; changed != s.changes {
			t.Errorf("%s: generation changed %v, want %v", s.name, changed, s.changes)
		}
	}
	before := d.Generation()
	d.SetMaxStringLength(100)
	if d.Generation() == before {
		t.Error("SetMaxStringLength left the generation as it was")
	}
	before = d.Generation()
	d.SetMaxWireStringLength(100)
	if d.Generation() == before {
		t.Error("SetMaxWireStringLength left the generation as it was")
	}
	before = d.Generation()
	d.SetAllowedMaxDynamicTableSize(64)
	if d.Generation() == before {
		t.Error("a smaller allowed table size left the generation as it was")
	}
	before = d.Generation()
	d.SetAllowedMaxDynamicTableSize(4096)
	if d.Generation() != before {
		t.Error("a larger allowed table size, which changes no entry, changed the generation")
	}
	// The limits changed, indexed fields still change nothing.
	before = d.Generation()
	if _, err := c.block(unhex(t, "828684"), 0); err != nil {
		t.Fatal(err)
	}
	if d.Generation() != before {
		t.Error("indexed static fields changed the generation")
	}
}
