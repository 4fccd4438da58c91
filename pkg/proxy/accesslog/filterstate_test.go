package accesslog

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testObject is a filter state object with both forms, or PLAIN only.
type testObject struct {
	plain string
	typed proto.Message
}

func (o testObject) FilterStateString() (string, bool) { return o.plain, o.plain != "" }
func (o testObject) FilterStateProto() proto.Message   { return o.typed }

// fieldObject has fields (and no serialization), as Envoy's ext_authz
// logging info.
type fieldObject struct{}

func (fieldObject) FilterStateString() (string, bool) { return "", false }
func (fieldObject) FilterStateProto() proto.Message   { return nil }
func (fieldObject) FilterStateField(name string) (any, bool) {
	switch name {
	case "n":
		return int64(42), true
	case "s":
		return `a"b`, true
	}
	return nil, false
}

func filterStateEntry() *Entry {
	e := &Entry{}
	e.SetFilterState("both", testObject{plain: "2,1", typed: wrapperspb.String("a\"b")})
	e.SetFilterState("plain", testObject{plain: "p"})
	e.SetFilterState("fields", fieldObject{})
	return e
}

func TestFilterStateOperator(t *testing.T) {
	tests := map[string]struct{ format, want string }{
		"TYPED by default": {"%FILTER_STATE(both)%", `"a\"b"`},
		"TYPED":            {"%FILTER_STATE(both:TYPED)%", `"a\"b"`},
		"PLAIN":            {"%FILTER_STATE(both:PLAIN)%", "2,1"},
		"truncated":        {"%FILTER_STATE(both:PLAIN):1%", "2"},
		"no TYPED form":    {"%FILTER_STATE(plain:TYPED)%", "-"},
		"no such key":      {"[%FILTER_STATE(none:PLAIN)%]", "[-]"},
		"number field":     {"%FILTER_STATE(fields:FIELD:n)%", "42"},
		"string field":     {"%FILTER_STATE(fields:FIELD:s)%", `a"b`},
		"no such field":    {"%FILTER_STATE(fields:FIELD:x)%", "-"},
		"no fields":        {"%FILTER_STATE(plain:FIELD:n)%", "-"},
		"no serialization": {"%FILTER_STATE(fields)%", "-"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := Text(tc.format, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Append(nil, filterStateEntry())); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFilterStateTypedJSON(t *testing.T) {
	f := mustJSON(t, `{"t": "%FILTER_STATE(both)%", "p": "%FILTER_STATE(both:PLAIN)%", "n": "%FILTER_STATE(none)%",
		"fn": "%FILTER_STATE(fields:FIELD:n)%", "fs": "%FILTER_STATE(fields:FIELD:s)%", "fx": "%FILTER_STATE(fields:FIELD:x)%"}`, true, false)
	want := `{"fn":42,"fs":"a\"b","fx":null,"n":null,"p":"2,1","t":"a\"b"}` + "\n"
	if got := string(f.Append(nil, filterStateEntry())); got != want {
		t.Errorf("typed JSON:\n got %s\nwant %s", got, want)
	}
}

func TestFilterStateOperatorErrors(t *testing.T) {
	for format, want := range map[string]string{
		"%FILTER_STATE%":              "needs a key",
		"%FILTER_STATE(k:FIELD)%":     "FIELD needs a field name",
		"%FILTER_STATE(k:JSON)%":      `invalid format "JSON"`,
		"%FILTER_STATE(k:PLAIN:x:y)%": "too many arguments",
	} {
		if _, err := Text(format, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", format, err, want)
		}
	}
}
