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

func TestErrorUnder(t *testing.T) {
	tests := map[string]struct {
		prefix string
		err    error
		want   string
	}{
		"a field":               {prefix: "a.b", err: Errorf("c", "bad %d", 1), want: "a.b.c: bad 1"},
		"a list element":        {prefix: "a", err: Errorf("[2].c", "bad"), want: "a[2].c: bad"},
		"the message itself":    {prefix: "a", err: Errorf("", "bad"), want: "a: bad"},
		"no prefix":             {prefix: "", err: Errorf("c", "bad"), want: "c: bad"},
		"another kind of error": {prefix: "a", err: errors.New("bad"), want: "a: bad"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Under(tc.prefix, tc.err).Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
