package tlstest

import "testing"

// Leaves makes a CA and issues a leaf certificate for each of opts,
// failing t on an error: the certificates a test of what a TLS
// connection tells about its peers needs, without the checks of each
// step.
func Leaves(t testing.TB, opts ...Options) (*CA, []*Leaf) {
	t.Helper()
	ca, err := NewCA("Outrigger test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaves := make([]*Leaf, len(opts))
	for i, o := range opts {
		if leaves[i], err = ca.Issue(o); err != nil {
			t.Fatal(err)
		}
	}
	return ca, leaves
}
