package fieldpath

import (
	"errors"
	"testing"
)

func TestPrefixAndSplit(t *testing.T) {
	if Prefix("a.", nil) != nil || Split(nil) != nil {
		t.Fatal("nil must stay nil")
	}
	inner := errors.New("bad regex")
	one := Prefix("routes[0].", inner)
	if one.Error() != "routes[0].bad regex" || !errors.Is(one, inner) {
		t.Errorf("one problem: %q", one)
	}
	nested := errors.Join(errors.New("x: a"), errors.Join(errors.New("y: b"), errors.New("z: c")))
	got := Split(Prefix("vh[1].", nested))
	want := []string{"vh[1].x: a", "vh[1].y: b", "vh[1].z: c"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, got[i], want[i])
		}
	}
}
