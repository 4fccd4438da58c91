package logging

import (
	"strconv"
	"strings"
	"testing"
)

func TestAppendEscapedRecord(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"plain":                  {"[info] hello\n", "[info] hello\n"},
		"newline in message":     {"[info] a\nb\n", `[info] a\nb` + "\n"},
		"tab and carriage":       {"a\tb\rc\n", `a\tb\rc` + "\n"},
		"backslash":              {`C:\dir` + "\n", `C:\\dir` + "\n"},
		"quotes":                 {`say "hi" 'there'` + "\n", `say \"hi\" \'there\'` + "\n"},
		"control characters":     {"bell\x07 nul\x00 del\x7f\n", `bell\007 nul\000 del\177` + "\n"},
		"non-ASCII bytes":        {"café\n", `caf\303\251` + "\n"},
		"trailing whitespace":    {"msg \t\n", "msg \t\n"},
		"several trailing lines": {"msg\n\n", "msg\n\n"},
		"only whitespace":        {" \n", " \n"},
		"inner whitespace kept":  {"a\nb \n", `a\nb` + " \n"},
		"empty":                  {"", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(appendEscapedRecord(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestAppendJSONEscaped(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"plain":     {"hello", "hello"},
		"quote":     {`a"b`, `a\"b`},
		"backslash": {`a\b`, `a\\b`},
		"named":     {"\b\f\n\r\t", `\b\f\n\r\t`},
		"control":   {"\x01\x1f", `\u0001\u001f`},
		"utf8 kept": {"café ✓", "café ✓"},
		"slash":     {"a/b", "a/b"},
		"del kept":  {"\x7f", "\x7f"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(appendJSONEscaped(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("json(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestAppendNewlinesEscaped(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"no newline": {"a\tb", "a\tb"},
		"newlines":   {"a\nb\n", `a\nb\n`},
		"carriage":   {"a\r\nb", "a\r\\nb"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(appendNewlinesEscaped(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzEscapedRecord checks that an escaped record keeps everything but its
// trailing whitespace on one line and that the escaping can be undone.
func FuzzEscapedRecord(f *testing.F) {
	for _, s := range []string{"plain\n", "a\nb\n", "q\"'\\\x00\xff\n", "  \n\t", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := string(appendEscapedRecord(nil, []byte(in)))
		body := strings.TrimRight(out, " \t\n\v\f\r")
		if strings.ContainsAny(body, "\n\r") {
			t.Fatalf("escaped %q still breaks lines: %q", in, out)
		}
		// The escapes are Go's too, except \' inside a double-quoted string.
		back, err := strconv.Unquote(`"` + strings.ReplaceAll(body, `\'`, `'`) + `"`)
		if err != nil {
			t.Fatalf("escaped %q is not a valid C string %q: %v", in, body, err)
		}
		if back+out[len(body):] != in {
			t.Fatalf("escaped %q undoes to %q", in, back+out[len(body):])
		}
	})
}
