package options

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := map[string]struct {
		in, want string
	}{
		"plain":               {"serve", "'serve'"},
		"empty":               {"", "''"},
		"unicode kept":        {"zoné", "'zoné'"},
		"newline escaped":     {"a\nb", `'a\nb'`},
		"tab escaped":         {"a\tb", `'a\tb'`},
		"nul escaped":         {"\x00", `'\x00'`},
		"invalid utf8":        {"\xff\xfe", `'\xff\xfe'`},
		"line separator":      {"a\u2028b", `'a\u2028b'`},
		"quote kept":          {"it's", "'it's'"},
		"exactly the limit":   {strings.Repeat("y", maxQuotedRunes), "'" + strings.Repeat("y", maxQuotedRunes) + "'"},
		"cut after the limit": {strings.Repeat("y", maxQuotedRunes+1), "'" + strings.Repeat("y", maxQuotedRunes) + "...'"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := quote(tc.in); got != tc.want {
				t.Errorf("quote(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
