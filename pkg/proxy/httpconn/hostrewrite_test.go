package httpconn

import "testing"

func TestLastXFHEntry(t *testing.T) {
	tests := map[string]string{
		"":                "",
		"a":               "a",
		"a,b":             "b",
		"a, b":            " b",
		"a,b,":            "b",
		"a,b, ,":          "b",
		" , ":             "",
		"a.example:8080,": "a.example:8080",
	}
	for in, want := range tests {
		if got := lastXFHEntry(in); got != want {
			t.Errorf("lastXFHEntry(%q) = %q, want %q", in, got, want)
		}
	}
}
